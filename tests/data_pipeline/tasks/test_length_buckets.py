"""Length buckets (--length_buckets): parsing, deterministic per-bucket
batches, and GLUE fine-tuning with them: one trace per bucket, the crafted
task learnt as without buckets, equal dev metrics and submission files,
resume mid-epoch equal to the uninterrupted bucketed run."""

import random

import numpy as np
import pytest
import tensorflow as tf

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.task_settings import GlueOptions
from albert_tf.training.finetuning.tasks import (
  classifier as classifier_finetuning,
)
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import metrics as glue_metrics

KEYWORD = "banana"
SEQ = 64


# --- parsing -----------------------------------------------------------------


def test_parse_auto_none_and_lists():
  parse = length_buckets.parse_length_buckets
  assert parse("pow2", 128) == (32, 64, 128)
  assert parse("pow2", 384) == (32, 64, 128, 256, 384)
  # Without data to fit it to, auto is pow2 (bucket_boundaries fits it).
  assert parse("auto", 128) == (32, 64, 128)
  assert parse("auto", 32) == (32,)
  assert parse("auto", 16) == (16,)
  assert parse("none", 128) == (128,)
  assert parse("", 128) == (128,)
  assert parse("16, 48", 64) == (16, 48, 64)
  assert parse("16,64", 64) == (16, 64)


@pytest.mark.parametrize("value, message", [
    ("64,32", r"--length_buckets=64,32: lengths must be strictly increasing "
              r"\(64 then 32\)"),
    ("32,32", "strictly increasing"),
    ("32,256", r"256 exceeds --max_seq_length=128"),
    ("0,32", "must be positive"),
    ("32,big", r"'big' is not an integer")])
def test_parse_errors_name_the_flag(value, message):
  with pytest.raises(UserInputError, match=message):
    length_buckets.parse_length_buckets(value, 128)


# --- batching ----------------------------------------------------------------


def _padded_examples(n, seed):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, SEQ + 1, n)
  mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
  ids = mask * rng.integers(5, 90, (n, SEQ)).astype(np.int32)
  return dict(input_word_ids=ids, input_mask=mask), lengths


def test_batches_static_per_bucket_deterministic_and_resumable():
  features, lengths = _padded_examples(300, 0)
  buckets = (16, 32, SEQ)

  def stream():
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, np.arange(300))).repeat().shuffle(300, seed=3)
    return length_buckets.batch_by_length(dataset, buckets, 8,
                                          drop_remainder=True)

  batches = [(f["input_word_ids"].numpy(), i.numpy())
             for f, i in stream().take(60)]
  shapes = {ids.shape for ids, _ in batches}
  assert shapes == {(8, 16), (8, 32), (8, SEQ)}
  for ids, index in batches:
    width = ids.shape[1]
    bucket = buckets.index(width)
    low = buckets[bucket - 1] if bucket else 0
    assert np.all((lengths[index] > low) & (lengths[index] <= width))
    # Only padding was cut.
    np.testing.assert_array_equal(ids, features["input_word_ids"][index,
                                                                  :width])
  # Seeded: the same stream again; skipping 25 batches continues it.
  again = [i.numpy() for _, i in stream().take(60)]
  assert all(np.array_equal(a, b[1]) for a, b in zip(again, batches))
  resumed = [i.numpy() for _, i in stream().skip(25).take(35)]
  assert all(np.array_equal(a, b[1]) for a, b in zip(resumed, batches[25:]))


def test_evaluation_batches_cover_every_example_once():
  features, lengths = _padded_examples(101, 1)
  dataset = length_buckets.with_example_index(
      tf.data.Dataset.from_tensor_slices(features))
  batches = list(length_buckets.batch_by_length(dataset, (16, 32, SEQ), 16,
                                                drop_remainder=False))
  index = np.concatenate([b[length_buckets.EXAMPLE_INDEX].numpy()
                          for b in batches])
  assert sorted(index) == list(range(101))
  assert sum(b["input_mask"].numpy().sum() for b in batches) == lengths.sum()


# --- GLUE fine-tuning --------------------------------------------------------


def _keyword_rows(lines, rng):
  """SST-2 rows of 3 to 28 words: label 1 iff the keyword is in it."""
  rows = []
  for words in lines:
    words = list(words[:rng.randint(3, 28)])
    label = rng.randint(0, 1)
    if label:
      words.insert(rng.randint(0, len(words)), KEYWORD)
    rows.append((" ".join(words), str(label)))
  return rows


@pytest.fixture(scope="module")
def glue_setup(tmp_path_factory, english_corpus, spm_model):
  root = tmp_path_factory.mktemp("buckets")
  data_dir = root / "SST-2"
  data_dir.mkdir()
  rng = random.Random(0)
  with open(english_corpus, encoding="utf-8") as f:
    words = [w for w in f.read().split() if KEYWORD not in w.lower()]
  lines = [words[i:i + 45] for i in range(0, len(words) - 45, 45)]
  rng.shuffle(lines)
  splits = {"train": _keyword_rows(lines[:800], rng),
            "dev": _keyword_rows(lines[800:1000], rng)}
  for split, rows in splits.items():
    with open(data_dir / f"{split}.tsv", "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      f.writelines(f"{s}\t{label}\n" for s, label in rows)
  with open(data_dir / "test.tsv", "w", encoding="utf-8") as f:
    f.write("index\tsentence\n")
    f.writelines(f"{i}\t{s}\n" for i, (s, _) in
                 enumerate(_keyword_rows(lines[1000:1100], rng)))
  config_file = str(root / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=SEQ,
               initializer_range=0.02).to_json_file(config_file)
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir="", spm_model_file=spm_model,
      albert_config_file=config_file, do_train=True, do_eval=True,
      do_predict=True, max_seq_length=SEQ, train_batch_size=32,
      eval_batch_size=48, learning_rate=1e-3, train_step=400,
      warmup_step=40, save_checkpoints_steps=100, iterations_per_loop=20,
      log_steps=100, seed=0, length_buckets="auto")
  return dict(root=root, data_dir=str(data_dir), params=params)


def _run(setup, name, **changes):
  params = settings_fields.replace(
      setup["params"], output_dir=str(setup["root"] / name), **changes)
  return params, classifier_finetuning.run_classifier(
      params, GlueOptions(task_name="SST-2", data_dir=setup["data_dir"]))


def _glue_data(setup, buckets):
  from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
  tokenizer = tokenization.SentencePieceTokenizer(
      setup["params"].spm_model_file)
  return classifier_finetuning.GlueData(
      glue_examples.get_task("SST-2"), setup["data_dir"], tokenizer, SEQ,
      buckets=length_buckets.parse_length_buckets(buckets, SEQ))


@pytest.fixture(scope="module")
def bucketed_run(glue_setup):
  return _run(glue_setup, "bucketed")


@pytest.mark.slow
def test_bucketed_training_learns_as_well_as_unbucketed(glue_setup,
                                                        bucketed_run):
  _, bucketed = bucketed_run
  _, unbucketed = _run(glue_setup, "unbucketed", length_buckets="none")
  print("dev accuracy: bucketed", bucketed["eval"]["accuracy"],
        "unbucketed", unbucketed["eval"]["accuracy"])
  assert bucketed["eval"]["accuracy"] > 0.9
  assert unbucketed["eval"]["accuracy"] > 0.9
  assert abs(bucketed["eval"]["accuracy"] -
             unbucketed["eval"]["accuracy"]) <= 0.03


@pytest.mark.slow
def test_bucketed_evaluation_and_predictions_equal_unbucketed(
    glue_setup, bucketed_run, tmp_path):
  params, result = bucketed_run
  task = glue_examples.get_task("SST-2")
  bucketed = _glue_data(glue_setup, "auto")
  padded = _glue_data(glue_setup, "none")
  assert bucketed.buckets == (32, SEQ) and padded.buckets == (SEQ,)
  dev = bucketed.features("dev")
  assert min(dev.lengths) <= 32 < max(dev.lengths)  # both buckets used
  runner = finetuning_runner.FinetuningRunner(
      settings_fields.replace(params, do_train=False),
      classifier_finetuning.build_glue_task(bucketed, 48))
  runner.restore_best()
  logits = {}
  for name, data in (("bucketed", bucketed), ("padded", padded)):
    logits[name] = runner.predict(data.dataset("dev", 48))["logits"]
    assert logits[name].shape == (len(dev), 2)
  np.testing.assert_allclose(logits["bucketed"], logits["padded"],
                             atol=1e-5)
  metrics = {name: glue_metrics.compute_metrics(task, dev.labels, value)
             for name, value in logits.items()}
  assert metrics["bucketed"]["accuracy"] == metrics["padded"]["accuracy"]
  assert metrics["bucketed"]["loss"] == pytest.approx(
      metrics["padded"]["loss"], abs=1e-6)
  # The run's own (bucketed) evaluation of its best checkpoint.
  assert result["eval"]["accuracy"] == metrics["padded"]["accuracy"]
  files = {}
  for name, data in (("bucketed", bucketed), ("padded", padded)):
    folder = tmp_path / name
    folder.mkdir()
    path = classifier_finetuning.predict_test(runner, data, 48, str(folder))
    with open(path["test"], encoding="utf-8") as f:
      files[name] = f.read()
  assert files["bucketed"] == files["padded"]
  assert len(files["padded"].splitlines()) == len(
      padded.features("test")) + 1 > 50
  with open(result["predictions"]["test"], encoding="utf-8") as f:
    assert f.read() == files["padded"]


def _short_params(setup, name, **changes):
  values = dict(output_dir=str(setup["root"] / name), do_eval=False,
                do_predict=False, train_step=40, warmup_step=4,
                save_checkpoints_steps=10, iterations_per_loop=5)
  values.update(changes)
  return settings_fields.replace(setup["params"], **values)


def test_traces_equal_buckets_not_batches(glue_setup):
  params = _short_params(glue_setup, "traces")
  runner = finetuning_runner.FinetuningRunner(
      params, classifier_finetuning.build_glue_task(
          _glue_data(glue_setup, "auto"), 48))
  runner.train()
  trainer = runner.trainer
  assert trainer.per_shape_steps and runner.step == 40
  # 40 batches, of two shapes: two traces.
  assert {shapes[0] for shapes in trainer.train_shapes} == {(32, 32),
                                                            (32, SEQ)}
  assert trainer.train_traces == len(trainer.train_shapes) == 2


@pytest.mark.slow
@pytest.mark.parametrize("strategy, jit_compile, train_step", [
    ("mirrored", False, 37), ("default", True, 23)])
def test_bucketed_steps_under_a_strategy_and_xla_stop_at_train_step(
    glue_setup, strategy, jit_compile, train_step):
  params = _short_params(glue_setup, f"{strategy}_{jit_compile}",
                         strategy=strategy, jit_compile=jit_compile,
                         train_step=train_step, seed=4)
  runner = finetuning_runner.FinetuningRunner(
      params, classifier_finetuning.build_glue_task(
          _glue_data(glue_setup, "auto"), 48))
  runner.train()
  trainer = runner.trainer
  assert runner.step == train_step
  assert trainer.train_traces == len(trainer.train_shapes) == 2
  assert tf.train.latest_checkpoint(params.runtime.output_dir).endswith(
      f"ckpt-{train_step}")


class _Killed(Exception):
  pass


def _model_weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  dtypes = reader.get_variable_to_dtype_map()
  return {name: reader.get_tensor(name) for name in dtypes
          if name.startswith("model/") and dtypes[name].is_floating}


@pytest.mark.slow
def test_resume_mid_epoch_equals_uninterrupted_bucketed_run(glue_setup):
  """800 examples, batch 32: ckpt-20 is mid-epoch (25 steps an epoch)."""
  data = _glue_data(glue_setup, "auto")
  reference = _short_params(glue_setup, "uninterrupted")
  finetuning_runner.FinetuningRunner(
      reference, classifier_finetuning.build_glue_task(data, 48)).train()
  params = _short_params(glue_setup, "killed")
  runner = finetuning_runner.FinetuningRunner(
      params, classifier_finetuning.build_glue_task(data, 48))
  save = runner.save_and_evaluate

  def save_then_die():
    save()
    if runner.step >= 20:
      raise _Killed
  runner.save_and_evaluate = save_then_die
  with pytest.raises(_Killed):
    runner.train()
  assert tf.train.latest_checkpoint(
      params.runtime.output_dir).endswith("ckpt-20")
  rerun = finetuning_runner.FinetuningRunner(
      params, classifier_finetuning.build_glue_task(data, 48))
  assert rerun.step == 20
  rerun.train()
  a = _model_weights(reference.runtime.output_dir)
  b = _model_weights(params.runtime.output_dir)
  assert sorted(a) == sorted(b) and len(a) > 10
  worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
  assert worst <= 1e-5, worst


def test_export_record_round_trip_and_bad_records(tmp_path):
  from data_pipeline.tasks.length_buckets import export_asset
  from data_pipeline.tasks.length_buckets import read_export_record
  assert read_export_record(str(tmp_path)) is None  # an older export
  for buckets, want in (((32, 64, 128), (32, 64, 128)), ((), (128,)),
                        ((32, 64), (32, 64, 128))):
    attribute, name, text = export_asset(128, buckets)
    (tmp_path / name).write_text(text)
    assert attribute == "length_buckets_file"
    assert read_export_record(str(tmp_path)) == want
  for bad in ('{"seq_length": 64, "length_buckets": [64, 32]}',
              '{"seq_length": 64, "length_buckets": [32]}',
              '{"length_buckets": "32,64"}'):
    (tmp_path / "length_buckets.json").write_text(bad)
    with pytest.raises(UserInputError, match="is not a length buckets "
                       "record"):
      read_export_record(str(tmp_path))
