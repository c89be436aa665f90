"""Our own fine-tuning run dir and our own export as --init_checkpoint,
head included: scored as they are (the run's own eval_results), exported,
trained on; their labels matched by name from their labels.json; their
config and vocabulary read from them. And fine-tuning continued from a
Hugging Face classifier folder (written by transformers) equals the same
updates continued from our own export of it, dropout on."""

import json
import logging
import os

import numpy as np
import pytest

from data_pipeline.tasks.label_list import LabelList
from tests.albert_tf.checkpoints import tool_sources_kit as sources
from tests.albert_tf.training.finetuning import own_data_kit as kit

torch = pytest.importorskip("torch")

SEQ = sources.SEQ
HEAD_ORDER = list(sources.LABELS)  # not sorted
_run_tool = sources.run_tool
_metrics = sources.eval_metrics
# Three updates at a rate that moves every weight, dropout on.
TRAIN = ["--do_train", "--train_step=3", "--warmup_step=0",
         "--learning_rate=1e-3", "--save_checkpoints_steps=3",
         "--train_batch_size=8", "--seed=0"]


def _common(root, out, init):
  return sources.classifier_args(init, root / "data.csv", out)


def _model_weights(run_dir):
  """Every model/ variable of a run's last checkpoint, by key."""
  import tensorflow as tf
  reader = tf.train.load_checkpoint(str(run_dir))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k.startswith("model/") and k.endswith("VARIABLE_VALUE")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, english_corpus, spm_model):
  """A Hugging Face classifier folder (dropout 0.1, unsorted id2label);
  `from_hf`: 3 updates from it, exported; `export0`: our export of it as it
  is (--do_eval --export_dir); `from_ours`: the same 3 updates from that
  export; `from_converted`: from the folder converted to our layout."""
  root = tmp_path_factory.mktemp("own_sources")
  folder = root / "hf_classifier"
  sources.hf_folder(folder, "AlbertForSequenceClassification", spm_model,
                    seed=3, max_position_embeddings=SEQ, num_labels=3,
                    id2label=dict(enumerate(HEAD_ORDER)),
                    hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
  rows = kit.classification_rows(kit.corpus_lines(english_corpus, 40), 2)
  kit.write_csv(root / "data.csv", rows, ("id", "text", "label"))
  data = [f"--train_file={root / 'data.csv'}"]
  assert _run_tool("run_classifier", *_common(root, root / "from_hf", folder),
                   *data, *TRAIN, "--do_eval",
                   f"--export_dir={root / 'from_hf_export'}") == 0
  assert _run_tool("run_classifier", *_common(root, root / "eval0", folder),
                   "--do_eval", f"--export_dir={root / 'export0'}") == 0
  assert _run_tool("run_classifier", *_common(root, root / "from_ours",
                                              root / "export0"),
                   *data, *TRAIN) == 0
  assert _run_tool("convert_checkpoint", f"--input_checkpoint={folder}",
                   f"--output_checkpoint={root / 'converted' / 'ckpt'}",
                   "--output_format=ours") == 0
  assert _run_tool("run_classifier", *_common(root, root / "from_converted",
                                              root / "converted"),
                   *data, *TRAIN) == 0
  return dict(root=root, rows=rows)


@pytest.mark.slow
def test_continued_from_hf_equals_continued_from_our_export(runs):
  """3 updates from the transformers folder == the same 3 updates from our
  export of it, and from its convert_checkpoint --output_format=ours folder
  (same seed, dropout 0.1): every weight to 1e-6, and the weights moved."""
  root = runs["root"]
  want = _model_weights(root / "from_hf")
  for source in ("from_ours", "from_converted"):
    got = _model_weights(root / source)
    assert sorted(got) == sorted(want) and len(want) > 20
    for key in want:
      np.testing.assert_allclose(got[key], want[key], atol=1e-6,
                                 err_msg=f"{source} {key}")
  start = _model_weights_of_export(root / "export0")
  head = "model/layer_with_weights-1/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"
  assert np.abs(want[head] - start[head]).max() > 1e-4


def _model_weights_of_export(export_dir):
  """The task model's weights of an export, under a run's keys."""
  import tensorflow as tf

  from albert_tf.checkpoints.task_models import task_sources
  paths = task_sources.find_source(str(export_dir))
  reader = tf.train.load_checkpoint(paths.prefix)
  stored, _ = task_sources._variables_by_path(reader)  # noqa: SLF001
  return {k: reader.get_tensor(v) for k, (v, _) in stored.items()}


@pytest.mark.slow
def test_our_run_and_export_are_scored_as_they_are(runs, caplog):
  """--do_eval alone, no config nor vocabulary flag: the run dir (its best
  checkpoint, config, labels.json, its export's spiece.model) and its
  export score what the run scored, to 1e-6; the run dir's --export_dir
  answers as the run's own export; one line says what was restored."""
  import tensorflow as tf

  from albert_tf import exports
  caplog.set_level(logging.INFO, logger="absl")
  root = runs["root"]
  want = _metrics(root / "from_hf")
  for name, source in (("run", root / "from_hf"),
                       ("export", root / "from_hf_export")):
    out = root / f"scored_{name}"
    args = [f"--export_dir={root / 're_export'}"] if name == "run" else []
    assert _run_tool("run_classifier", *_common(root, out, source),
                     "--do_eval", *args) == 0
    got = _metrics(out)
    assert sorted(got) == sorted(want)
    for key in want:
      assert got[key] == pytest.approx(want[key], abs=1e-6), (name, key)
    assert json.loads((out / "labels.json").read_text())["labels"] == (
        json.loads((root / "from_hf" / "labels.json").read_text())["labels"])
  assert ("classifier head from classifier/dense/bias, "
          "classifier/dense/kernel") in caplog.text
  for export in ("from_hf_export", "re_export"):
    assert json.loads((root / export / "assets" / "tokenizer.json")
                      .read_text()) == {"do_lower_case": True}
  texts = tf.constant([r["text"] for r in runs["rows"][:8]])
  answers = [exports.load_saved_model(str(folder)).signatures[
      "serving_default"](sentences=texts)
             for folder in (root / "from_hf_export", root / "re_export")]
  np.testing.assert_allclose(answers[1]["probabilities"].numpy(),
                             answers[0]["probabilities"].numpy(), atol=1e-6)


def _save_run(run_dir, labels):
  """A run dir of ours (its checkpoint, config and labels.json) of a token
  classifier or a classifier (`labels`: a label_list.LabelList), its
  weights random (seeded)."""
  import tensorflow as tf

  from albert_tf import AlbertConfig
  from albert_tf import models
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks import label_list
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ)
  head = (models.AlbertTokenClassifier
          if labels.task_type == "token_classification"
          else models.AlbertClassifier)
  model = head(AlbertEncoder(config, name="encoder"), len(labels.labels))
  model(dict(input_word_ids=np.ones((1, 4), np.int32),
             input_mask=np.ones((1, 4), np.int32),
             input_type_ids=np.zeros((1, 4), np.int32)))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(v + rng.normal(0.0, 0.5, v.shape).astype(np.float32))
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(run_dir),
                             1).save(1)
  config.to_json_file(os.path.join(run_dir, "albert_config.json"))
  label_list.write(str(run_dir), labels)


def test_sources_that_do_not_fit_are_one_line(runs, tmp_path, capsys,
                                              spm_model, caplog):
  """Another task's head (a NER run of ours) and a dev label the run's head
  does not know: exit 1, one "error:" line, nothing written.
  --init_head=false: a fresh head on the run's encoder, said in one line."""
  root = runs["root"]
  ner_run = tmp_path / "ner_run"
  _save_run(ner_run, LabelList("token_classification",
                               ("B-LOC", "I-LOC", "O"), "IOB2"))
  bad_dev = kit.write_csv(tmp_path / "bad.csv", [
      dict(r, label="bird") if i == 0 else r
      for i, r in enumerate(runs["rows"])], ("id", "text", "label"))
  cases = {
      "ner": (ner_run, [f"--spm_model_file={spm_model}"],
              "holds a token classifier (run_ner), not a sequence "
              "classifier"),
      "labels": (root / "from_hf", [f"--dev_file={bad_dev}"],
                 "does not know: bird"),
  }
  for name, (init, args, message) in cases.items():
    out = tmp_path / f"out_{name}"
    capsys.readouterr()
    code = _run_tool("run_classifier", *_common(root, out, init), *args,
                     "--do_eval")
    assert message in sources.error_line(capsys, code, out), name
  caplog.set_level(logging.INFO, logger="absl")
  out = tmp_path / "fresh"
  assert _run_tool("run_classifier", *_common(root, out, root / "from_hf"),
                   f"--train_file={root / 'data.csv'}", "--do_train",
                   "--train_step=1", "--warmup_step=0",
                   "--init_head=false") == 0
  fresh = [r for r in caplog.records
           if "--init_head=false: a fresh classifier head" in r.getMessage()]
  assert len(fresh) == 1


def test_a_glue_run_is_a_source_with_names(tmp_path, english_corpus,
                                           spm_model):
  """A GLUE run records labels.json (SST-2: "0", "1"); given as
  --init_checkpoint (its config read from it) with --do_eval alone it
  scores what the run scored, to 1e-6."""
  import random

  from albert_tf import AlbertConfig
  from tests.albert_tf.training.finetuning.test_run_classifier import (
    _keyword_rows,
  )
  with open(english_corpus, encoding="utf-8") as f:
    lines = [line.split()[:12] for line in f if len(line.split()) >= 4][:60]
  data_dir = tmp_path / "SST-2"
  data_dir.mkdir()
  rng = random.Random(0)
  for split, rows in (("train", lines[:40]), ("dev", lines[40:])):
    with open(data_dir / f"{split}.tsv", "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      f.writelines(f"{s}\t{label}\n" for s, label in _keyword_rows(rows, rng))
  config_file = tmp_path / "albert_config.json"
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64,
               max_position_embeddings=SEQ).to_json_file(str(config_file))
  glue = ["--task_name=SST-2", f"--data_dir={data_dir}",
          f"--spm_model_file={spm_model}", f"--max_seq_length={SEQ}",
          "--length_buckets=none", "--do_eval"]
  run = tmp_path / "run"
  assert _run_tool("run_classifier", *glue, *TRAIN,
                   f"--albert_config_file={config_file}",
                   f"--output_dir={run}") == 0
  assert json.loads((run / "labels.json").read_text()) == {
      "task_type": "classification", "labels": ["0", "1"]}
  out = tmp_path / "scored"
  assert _run_tool("run_classifier", *glue, f"--init_checkpoint={run}",
                   f"--output_dir={out}") == 0
  want, got = _metrics(run), _metrics(out)
  assert sorted(got) == sorted(want)
  for key in want:
    assert got[key] == pytest.approx(want[key], abs=1e-6), key


def test_config_vocabulary_and_lowercasing_come_from_our_export(tmp_path):
  """An export's albert_config.json, vocabulary and recorded do_lower_case
  fill the settings left out (a run dir: its recorded export's); a
  --do_lower_case the user gave stays; an export written before
  tokenizer.json keeps the default."""
  from albert_tf.training import encoder_files
  from albert_tf.training.finetuning.params import FinetuningParams
  export = tmp_path / "export"
  (export / "assets").mkdir(parents=True)
  (export / "saved_model.pb").write_bytes(b"")
  for name in ("albert_config.json", "spiece.model", "labels.txt"):
    (export / "assets" / name).write_text("{}")
  (export / "assets" / "tokenizer.json").write_text(
      '{"do_lower_case": false}')
  run = tmp_path / "run"
  run.mkdir()
  for name in ("albert_config.json", "checkpoint", "eval_results.txt"):
    (run / name).write_text("{}")
  (run / "export.json").write_text(json.dumps({"export_dir": str(export)}))
  for source in (export, run):
    params = FinetuningParams.from_flat(init_checkpoint=str(source),
                                        output_dir=str(tmp_path / "out"))
    found = encoder_files.checkpoint_folder_files(params, user_set=set())
    config = export if source == export else run
    assert found == {
        "albert_config_file": str(config / "assets" / "albert_config.json"
                                  if source == export else
                                  config / "albert_config.json"),
        "spm_model_file": str(export / "assets" / "spiece.model"),
        "do_lower_case": False}, source
    assert "do_lower_case" not in encoder_files.checkpoint_folder_files(
        params, user_set={"do_lower_case"})
  (export / "assets" / "tokenizer.json").unlink()
  params = FinetuningParams.from_flat(init_checkpoint=str(export),
                                      output_dir=str(tmp_path / "out"))
  assert "do_lower_case" not in encoder_files.checkpoint_folder_files(
      params, user_set=set())


@pytest.mark.slow
def test_regression_and_multi_label_runs_are_scored_as_they_are(
    tmp_path, english_corpus, spm_model):
  """Own-data regression and multi-label runs (their labels.json task
  type): --do_eval alone on the run dir scores what the run scored, to
  1e-6."""
  lines = kit.corpus_lines(english_corpus, 24, seed=3)
  cases = {
      "regression": (kit.regression_rows(lines, 1), None),
      "multi_label": (kit.multi_label_rows(lines, 2),
                      lambda r: dict(r, label="|".join(r["label"]) or "[]")),
  }
  for name, (rows, convert) in cases.items():
    folder = tmp_path / f"hf_{name}"
    sources.hf_folder(folder, "AlbertForSequenceClassification", spm_model,
                      seed=6, max_position_embeddings=SEQ,
                      num_labels=1 if name == "regression" else 3)
    rows = [dict(r, id=f"r{i}") for i, r in enumerate(rows)]
    data = kit.write_csv(tmp_path / f"{name}.csv", rows,
                         ("id", "text", "label"), convert)
    common = [f"--dev_file={data}", "--text_a_column=text",
              "--label_column=label", f"--max_seq_length={SEQ}",
              "--length_buckets=none", "--do_eval"]
    run = tmp_path / f"run_{name}"
    assert _run_tool("run_classifier", *common, f"--init_checkpoint={folder}",
                     f"--train_file={data}", f"--task_type={name}",
                     "--init_head=false", *TRAIN,
                     f"--export_dir={tmp_path / f'export_{name}'}",
                     f"--output_dir={run}") == 0
    assert json.loads((run / "labels.json").read_text())["task_type"] == name
    out = tmp_path / f"scored_{name}"
    assert _run_tool("run_classifier", *common, f"--init_checkpoint={run}",
                     f"--output_dir={out}") == 0
    want, got = _metrics(run), _metrics(out)
    assert sorted(got) == sorted(want) and want, name
    for key in want:
      assert got[key] == pytest.approx(want[key], abs=1e-6), (name, key)


def test_a_multi_label_runs_threshold_carries_over(tmp_path, english_corpus,
                                                   spm_model, caplog):
  """A multi-label run of ours that recorded threshold 0.7, given as
  --init_checkpoint: the new run keeps 0.7 (its labels.json, its dev
  predictions: the labels whose probability is above it) unless
  --threshold is given; the log line says which."""
  names = ("fruit", "music", "volcano")
  run = tmp_path / "run"
  _save_run(run, LabelList("multi_label", names, threshold=0.7))
  rows = kit.multi_label_rows(kit.corpus_lines(english_corpus, 24), 2)
  kit.write_csv(tmp_path / "data.csv", rows, ("id", "text", "label"),
                lambda r: dict(r, label="|".join(r["label"]) or "[]"))
  caplog.set_level(logging.INFO, logger="absl")
  for given, want, why in ((None, 0.7, "recorded with --init_checkpoint="),
                           (0.3, 0.3, "--threshold")):
    out = tmp_path / f"out_{given}"
    caplog.clear()
    assert _run_tool("run_classifier", *_common(tmp_path, out, run),
                     "--do_eval", f"--spm_model_file={spm_model}",
                     *([f"--threshold={given}"] if given else [])) == 0
    assert json.loads((out / "labels.json").read_text()) == {
        "task_type": "multi_label", "labels": list(names),
        "threshold": want}
    assert f"threshold {want:g} ({why}" in caplog.text
    records = [json.loads(line) for line in
               (out / "dev_predictions.jsonl").read_text().splitlines()]
    probabilities = np.array([[r["probabilities"][n] for n in names]
                              for r in records])
    # Probabilities on both sides of either threshold: the cut shows.
    assert ((probabilities > 0.3) & (probabilities <= 0.7)).any()
    assert [r["labels"] for r in records] == [
        [n for n, p in zip(names, row) if p > want] for row in probabilities]
