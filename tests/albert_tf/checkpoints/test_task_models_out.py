"""Our fine-tuned task models written out as other layouts' task models.

Run dirs are built as the fine-tuning runner saves them
(tf.train.Checkpoint(model=<task model>, optimizer=...) under
CheckpointManager, best/, albert_config.json, labels.json); then
convert_checkpoint writes them, and transformers' own Auto classes load the
Hugging Face folders (no missing / unexpected / mismatched keys) and give
our logits on the same ids (1e-5, float32). The official names and shapes
are listed here independently of the library (google-research/albert's
classifier_utils.py, squad_utils.py, race_utils.py).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import AlbertConfig
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import head_tables
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints import task_sources
from data_pipeline.tasks import label_list as label_list_lib

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 32
CONFIG = AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ)
H = CONFIG.hidden_size
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def build(kind, num_labels=2, seed=0):
  """Our task model of `kind`, every variable random (seeded), so that a
  lost bias or a transposed kernel shows."""
  from albert_tf import models
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(CONFIG, name="encoder")
  model = {"classifier": lambda: models.AlbertClassifier(encoder, num_labels),
           "token_classifier": lambda: models.AlbertTokenClassifier(
               encoder, num_labels),
           "span": lambda: models.AlbertSpanLabeler(encoder),
           "multiple_choice": lambda: models.AlbertMultipleChoice(encoder, 3),
           "squad_v2": lambda: models.AlbertSquadV2(encoder)}[kind]()
  rng = np.random.default_rng(seed)
  for v in model.weights:
    if v.dtype == tf.float32:
      v.assign(rng.normal(0, 0.2, v.shape).astype(np.float32))
  return model


def save_run(model, run_dir, label_list=None, step=3):
  """The run dir as FinetuningRunner writes it: the resume checkpoint
  (model + optimizer), the best dev checkpoint, albert_config.json, and the
  task's labels.json (own data, NER)."""
  import tf_keras
  optimizer = tf_keras.optimizers.Adam()
  optimizer.iterations.assign(step)
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
  tf.train.CheckpointManager(checkpoint, run_dir, 2,
                             step_counter=optimizer.iterations).save(step)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                             os.path.join(run_dir, "best"), 1,
                             step_counter=optimizer.iterations).save(step)
  CONFIG.to_json_file(os.path.join(run_dir, "albert_config.json"))
  if label_list is not None:
    label_list_lib.write(run_dir, label_list)
  return run_dir


def ids(batch, seed=1, choices=None):
  rng = np.random.default_rng(seed)
  shape = (batch,) + ((choices,) if choices else ()) + (SEQ,)
  word = rng.integers(5, 99, size=shape).astype(np.int32)
  mask = np.ones_like(word)
  mask[..., SEQ - 5:] = 0
  types = np.zeros_like(word)
  types[..., SEQ // 2:] = 1
  return dict(input_word_ids=word * mask, input_mask=mask,
              input_type_ids=types)


def torch_outputs(model, inputs):
  with torch.no_grad():
    return model(
        input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(inputs["input_type_ids"],
                                    dtype=torch.long))


def load_hf(auto_class, folder):
  """transformers' own Auto class; asserts every key fitted."""
  model, info = getattr(transformers, auto_class).from_pretrained(
      folder, output_loading_info=True)
  assert info["missing_keys"] in (set(), [])
  assert info["unexpected_keys"] in (set(), [])
  assert info["mismatched_keys"] in (set(), [])
  return model.eval()


def read_back_hf(folder, kind):
  """ours -> Hugging Face -> ours with the name tables: canonical arrays."""
  from safetensors.numpy import load_file
  tensors = load_file(os.path.join(folder, "model.safetensors"))
  table = (name_tables.huggingface_table(CONFIG) +
           head_tables.head_table("huggingface", kind))
  if kind in head_tables.HUGGINGFACE_WITHOUT_POOLER:
    table = [e for e in table if not e.ours.startswith("pooler/")]
  shapes = dict(name_tables.our_shapes(CONFIG))
  shapes.update(head_tables.head_shapes(
      kind, H, tensors.get("classifier.bias", np.zeros(2)).shape[0]))
  return mapping.map_to_ours(tensors, table, shapes, source_name=folder,
                             layout="huggingface")


def assert_round_trip(model, folder, kind):
  from albert_tf.checkpoints import model_variables
  ours = model_variables.canonical_arrays(model)
  back = read_back_hf(folder, kind)
  if kind in head_tables.HUGGINGFACE_WITHOUT_POOLER:
    ours = {k: v for k, v in ours.items() if not k.startswith("pooler/")}
  assert set(back) == set(ours)
  for name, array in ours.items():
    np.testing.assert_array_equal(back[name], array, err_msg=name)


@pytest.mark.parametrize("task_type,labels,problem_type", [
    ("classification", ("volcano", "fruit", "music"),
     "single_label_classification"),
    ("multi_label", ("zeta", "alpha"), "multi_label_classification"),
    ("regression", (), "regression")])
def test_sequence_classifier_to_huggingface(tmp_path, task_type, labels,
                                            problem_type):
  """AutoModelForSequenceClassification loads it whole, id2label in the
  head's order (unsorted here), and gives our logits."""
  num_labels = len(labels) or 1
  model = build("classifier", num_labels)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList(task_type, labels))
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  assert "classifier head" in line and "AlbertForSequenceClassification" in (
      line)
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert type(hf).__name__ == "AlbertForSequenceClassification"
  assert hf.config.problem_type == problem_type
  assert hf.config.num_labels == num_labels
  if labels:
    assert hf.config.id2label == dict(enumerate(labels))
    assert hf.config.label2id == {n: i for i, n in enumerate(labels)}
  inputs = ids(4)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (4, num_labels)
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "classifier")


def test_span_to_huggingface_question_answering(tmp_path):
  model = build("span")
  run_dir = save_run(model, str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForQuestionAnswering", out)
  inputs = ids(3)
  want = model(inputs, training=False)
  got = torch_outputs(hf, inputs)
  np.testing.assert_allclose(got.start_logits.numpy(),
                             want["start_logits"].numpy(), atol=1e-5)
  np.testing.assert_allclose(got.end_logits.numpy(),
                             want["end_logits"].numpy(), atol=1e-5)
  assert "albert.pooler.weight" not in json.dumps(
      sorted(hf.state_dict()))  # transformers' QA class has none
  assert_round_trip(model, out, "span")


def test_token_classifier_to_huggingface(tmp_path):
  tags = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")  # not sorted
  model = build("token_classifier", len(tags))
  run_dir = save_run(model, str(tmp_path / "run"), label_list_lib.LabelList(
      "token_classification", tags, scheme="IOB2"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForTokenClassification", out)
  assert hf.config.id2label == dict(enumerate(tags))
  inputs = ids(3)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (3, SEQ, len(tags))
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "token_classifier")


def test_multiple_choice_to_huggingface(tmp_path):
  model = build("multiple_choice")
  run_dir = save_run(model, str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForMultipleChoice", out)
  inputs = ids(2, choices=3)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (2, 3)
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "multiple_choice")


OFFICIAL_HEADS = {  # kind -> the official scripts' names -> shapes (C = 3)
    "classifier": {"output_weights": [3, H], "output_bias": [3]},
    "span": {"cls/squad/output_weights": [2, H],
             "cls/squad/output_bias": [2]},
    "multiple_choice": {"output_weights": [1, H], "output_bias": [1]},
    "squad_v2": {
        "start_logits/dense/kernel": [H, 1], "start_logits/dense/bias": [1],
        "end_logits/dense_0/kernel": [2 * H, H],
        "end_logits/dense_0/bias": [H],
        "end_logits/LayerNorm/gamma": [H], "end_logits/LayerNorm/beta": [H],
        "end_logits/dense_1/kernel": [H, 1], "end_logits/dense_1/bias": [1],
        "answer_class/dense_0/kernel": [2 * H, H],
        "answer_class/dense_0/bias": [H],
        "answer_class/dense_1/kernel": [H, 1]},
}


@pytest.mark.parametrize("kind", sorted(OFFICIAL_HEADS))
def test_task_model_to_official(tmp_path, kind):
  """The official scripts' names and shapes; the arrays read back are
  ours exactly; labels.txt lists a classifier's names in the head's order."""
  from albert_tf.checkpoints import model_variables
  labels = ("not_entailment", "entailment", "contradiction")
  model = build(kind, 3)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", labels)
                     if kind == "classifier" else None)
  prefix = str(tmp_path / "official" / "model.ckpt")
  converter.convert_checkpoint(CONFIG, run_dir, prefix, "official")
  reader = tf.train.load_checkpoint(prefix)
  stored = reader.get_variable_to_shape_map()
  heads = {n: s for n, s in stored.items() if not n.startswith("bert/")}
  assert heads == OFFICIAL_HEADS[kind]
  assert "bert/pooler/dense/kernel" in stored
  ours = model_variables.canonical_arrays(model)
  table = (name_tables.official_table(CONFIG) +
           head_tables.head_table("official", kind))
  shapes = dict(name_tables.our_shapes(CONFIG))
  shapes.update(head_tables.head_shapes(kind, H, 3))
  back = mapping.map_to_ours({n: reader.get_tensor(n) for n in stored},
                             table, shapes, source_name=prefix,
                             layout="official")
  assert set(back) == set(ours)
  for name, array in ours.items():
    np.testing.assert_array_equal(back[name], array, err_msg=name)
  if kind in ("classifier", "span"):  # [out, in]: our kernel transposed
    weights = [n for n in heads if n.endswith("output_weights")][0]
    np.testing.assert_array_equal(reader.get_tensor(weights),
                                  ours[f"{kind}/dense/kernel"].T)
  labels_file = tmp_path / "official" / "labels.txt"
  if kind == "classifier":
    assert labels_file.read_text() == "".join(f"{n}\n" for n in labels)
  else:
    assert not labels_file.exists()


def test_inexpressible_heads_are_refused_before_writing(tmp_path):
  """The official v2 head has no Hugging Face class; the official scripts
  have no token classifier: one line each, nothing written."""
  run_dir = save_run(build("squad_v2"), str(tmp_path / "v2"))
  out = tmp_path / "hf"
  with pytest.raises(UserInputError, match="huggingface layout cannot hold "
                     "the official SQuAD v2.0 head"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out), "huggingface")
  assert not out.exists()
  run_dir = save_run(build("token_classifier", 3), str(tmp_path / "ner"),
                     label_list_lib.LabelList("token_classification",
                                              ("O", "B-X", "I-X")))
  with pytest.raises(UserInputError, match="official layout cannot hold a "
                     "token classifier"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out / "model.ckpt"),
                                 "official")
  assert not out.exists()


def test_regression_to_official_and_multi_label_refused(tmp_path):
  """A regression head is run_classifier's STS-B head (output_weights
  [1, H], no labels.txt); a multi-label head has no official form (its
  run_classifier scores a softmax): one line, nothing written."""
  run_dir = save_run(build("classifier", 1), str(tmp_path / "sts"),
                     label_list_lib.LabelList("regression"))
  prefix = tmp_path / "official" / "model.ckpt"
  converter.convert_checkpoint(CONFIG, run_dir, str(prefix), "official")
  stored = tf.train.load_checkpoint(str(prefix)).get_variable_to_shape_map()
  assert stored["output_weights"] == [1, H]
  assert not (tmp_path / "official" / "labels.txt").exists()
  run_dir = save_run(build("classifier", 2), str(tmp_path / "multi"),
                     label_list_lib.LabelList("multi_label", ("x", "y")))
  out = tmp_path / "multi_official"
  with pytest.raises(UserInputError, match="official layout cannot hold one"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out / "model.ckpt"),
                                 "official")
  assert not out.exists()


@pytest.mark.parametrize("num_labels", [3, 1])
def test_a_run_without_label_names(tmp_path, num_labels):
  """A GLUE run records no labels.json (and did not export): Hugging Face's
  own LABEL_<i> names; one output is STS-B's regression head."""
  run_dir = save_run(build("classifier", num_labels), str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForSequenceClassification", out)
  if num_labels == 1:
    assert "regression" in line
    assert hf.config.problem_type == "regression"
  else:
    assert "3 unnamed labels" in line
    assert hf.config.problem_type == "single_label_classification"
  assert hf.config.id2label == {i: f"LABEL_{i}" for i in range(num_labels)}


def test_labels_that_disagree_with_the_head_are_refused(tmp_path):
  run_dir = save_run(build("classifier", 3), str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", ("a", "b")))
  with pytest.raises(UserInputError, match="head has 3 outputs but the "
                     "run's labels"):
    converter.convert_checkpoint(CONFIG, run_dir, str(tmp_path / "hf"),
                                 "huggingface")
  assert not (tmp_path / "hf").exists()


def test_a_pretraining_run_converts_as_before(tmp_path):
  """A run dir without a task head (a pretraining run) is no task source:
  its encoder and pretraining heads convert as before."""
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  run_dir = str(tmp_path / "pretrain")
  pretrainer = AlbertPretrainer(AlbertEncoder(CONFIG))
  tf.train.CheckpointManager(tf.train.Checkpoint(model=pretrainer), run_dir,
                             1).save(1)
  CONFIG.to_json_file(os.path.join(run_dir, "albert_config.json"))
  paths = task_sources.find_source(run_dir)
  assert task_sources.read_task_source(paths, CONFIG) is None
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  assert "heads: masked_lm, sentence_order" in line
  with open(os.path.join(out, "config.json")) as f:
    assert json.load(f)["architectures"] == ["AlbertForPreTraining"]


def run_tool(*flags):
  return subprocess.run(
      [sys.executable, "-m", "tools.convert_checkpoint", *flags],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


@pytest.mark.slow
def test_the_tool_reads_the_run_dir_alone(tmp_path):
  """Only --input_checkpoint (the run dir), --output_checkpoint and
  --output_format (huggingface, official): the config and labels come from
  the run; a squad_v2 run to huggingface is one line, exit 1, nothing
  written. (docs/checkpoints.md's commands.)"""
  labels = ("b", "a")
  model = build("classifier", 2)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", labels))
  out = str(tmp_path / "hf")
  done = run_tool(f"--input_checkpoint={run_dir}",
                  f"--output_checkpoint={out}", "--output_format=huggingface")
  assert done.returncode == 0, done.stderr
  with open(os.path.join(out, "config.json")) as f:
    values = json.load(f)
  assert values["architectures"] == ["AlbertForSequenceClassification"]
  assert values["id2label"] == {"0": "b", "1": "a"}
  official = tmp_path / "official"
  done = run_tool(f"--input_checkpoint={run_dir}",
                  f"--output_checkpoint={official / 'model.ckpt'}",
                  "--output_format=official")
  assert done.returncode == 0, done.stderr
  assert (official / "labels.txt").read_text() == "b\na\n"
  v2 = save_run(build("squad_v2"), str(tmp_path / "v2"))
  failed = run_tool(f"--input_checkpoint={v2}",
                    f"--output_checkpoint={tmp_path / 'v2_hf'}",
                    "--output_format=huggingface")
  assert failed.returncode == 1
  assert failed.stderr.strip().count("\n") == 0, failed.stderr
  assert "cannot hold the official SQuAD v2.0 head" in failed.stderr
  assert not (tmp_path / "v2_hf").exists()


@pytest.mark.slow
def test_a_real_run_and_its_export_to_huggingface_and_official(
    tmp_path, spm_model, english_corpus):
  """run_classifier's library path (own data, 4 steps, --export_dir) writes
  the run; the run dir alone converts to Hugging Face with its tokenizer
  (the export's spiece.model, recorded in export.json) and id2label
  (labels.json, sorted by the run: fruit, music, volcano), and PyTorch gives
  the export's token_ids logits; the export converts to official with
  labels.txt."""
  from albert_tf.exports import load_saved_model
  from albert_tf.training.finetuning import own_data
  from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
  from tests.albert_tf.training.finetuning import own_data_kit as kit
  lines = kit.corpus_lines(english_corpus, 80)
  train = kit.write_csv(tmp_path / "train.csv",
                        kit.classification_rows(lines[:64], 0),
                        ["text", "label"])
  dev = kit.write_csv(tmp_path / "dev.csv",
                      kit.classification_rows(lines[64:], 1),
                      ["text", "label"])
  config_file = kit.tiny_config(tmp_path / "albert_config.json")
  run_dir, export_dir = tmp_path / "run", str(tmp_path / "export")
  own_data.run_own_data(
      kit.run_settings(run_dir, config_file, spm_model, train_step=4,
                       warmup_step=1, save_checkpoints_steps=2,
                       train_batch_size=8),
      OwnDataOptions.from_flat(train_file=train, dev_file=dev,
                               export_dir=export_dir))
  config = AlbertConfig.from_json_file(config_file)
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(config, str(run_dir), out, "huggingface")
  assert {"spiece.model", "config.json", "model.safetensors"} <= set(
      os.listdir(out))
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert hf.config.id2label == {0: "fruit", 1: "music", 2: "volcano"}
  assert hf.config.problem_type == "single_label_classification"
  inputs = ids(3)
  inputs["input_word_ids"] = (inputs["input_word_ids"] * 17 %
                              config.vocab_size * inputs["input_mask"])
  serving = load_saved_model(export_dir).signatures["token_ids"]
  want = serving(**{k: tf.constant(v) for k, v in inputs.items()})
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             want["logits"].numpy(), atol=1e-5)
  prefix = str(tmp_path / "official" / "model.ckpt")
  line = converter.convert_checkpoint(config, export_dir, prefix, "official")
  assert "labels fruit, music, volcano" in line
  assert (tmp_path / "official" / "labels.txt").read_text() == (
      "fruit\nmusic\nvolcano\n")
  assert tf.train.load_checkpoint(prefix).get_variable_to_shape_map()[
      "output_weights"] == [3, 32]


@pytest.mark.slow
def test_an_export_converts_with_its_vocabulary_and_labels(tmp_path):
  """A classifier export (WordPiece): its weights, its vocab.txt (as
  vocab.txt + tokenizer.json) and labels.txt names, the head's order."""
  from albert_tf.exports.serving.classifier import export_classifier
  labels = ("spam", "ham")
  model = build("classifier", 2)
  config_file = str(tmp_path / "albert_config.json")
  CONFIG.to_json_file(config_file)
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                             [f"w{i}" for i in range(94)]) + "\n")
  export_dir = export_classifier(model, str(tmp_path / "export"), "", labels,
                                 1, SEQ, albert_config_file=config_file,
                                 vocab_file=str(vocab))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, export_dir, out, "huggingface")
  assert {"vocab.txt", "tokenizer.json"} <= set(os.listdir(out))
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert hf.config.id2label == {0: "spam", 1: "ham"}
  inputs = ids(3)
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             model(inputs, training=False)["logits"].numpy(),
                             atol=1e-5)
  assert_round_trip(model, out, "classifier")
