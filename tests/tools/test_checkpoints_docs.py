"""The flows of docs/checkpoints.md ("From a download to a served model"),
read from the page and run by bash as written (tests/tools/
docs_commands.py), from the folders a user holds:

- a pretrained model: a released TF1 download (no `checkpoint` state file)
  through continued pretraining, fine-tuning with evaluation, export,
  LiteRT and ONNX files, and predictions (ONNX Runtime) over a CSV; a
  Hugging Face AlbertForMaskedLM folder written by transformers through
  continued pretraining (from there on the flow reads only the run
  directory, the same from either folder);
- a Hugging Face AlbertForSequenceClassification folder written by
  transformers (id2label not in sorted order): scored as it is on a CSV of
  its label names (PyTorch's probabilities and accuracy), exported,
  predicted with; trained further and converted back to Hugging Face,
  which transformers' AutoModelForSequenceClassification loads with the
  export's logits.

Only the sizes change (sequence 32, a few steps), each replaced value on
the page. tools run: create_pretraining_data, run_pretraining,
run_classifier, export_tflite, export_onnx, predict, convert_checkpoint.
"""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from tests.tools import docs_commands

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

PAGE = "checkpoints.md"
PRETRAINED = "test_a_pretrained_model_from_download_to_predictions"
CLASSIFIER = "test_a_huggingface_classifier_in_and_back_out"
SEQ = 32
CONFIG = docs_commands.tiny_config(2000, SEQ)
HEAD_ORDER = ["other", "cardio"]  # the Hugging Face head's, not sorted
# The page's value -> the test's (each must be on the page).
SIZES = {"--max_seq_length=512": f"--max_seq_length={SEQ}",
         "--max_seq_length=128": f"--max_seq_length={SEQ}",
         "--seq_length=128": f"--seq_length={SEQ}",
         "--max_predictions_per_seq=20": "--max_predictions_per_seq=5",
         "--train_batch_size=512": "--train_batch_size=8",
         "--num_train_steps=10000": "--num_train_steps=4 "
                                    "--iterations_per_loop=2 "
                                    "--save_checkpoints_steps=2",
         "--num_warmup_steps=500": "--num_warmup_steps=1"}


def _block(test):
  blocks = docs_commands.blocks(PAGE, __file__, test)
  assert len(blocks) == 1, blocks
  return blocks[0]


def _inputs(folder):
  """The domain text, tickets/{train,dev}.csv and tickets/new.csv (dev's
  texts, without their labels); returns dev's rows."""
  docs_commands.domain_inputs(folder)
  shutil.copy(folder / "tickets" / "dev.csv", folder / "tickets" / "new.csv")
  return _read_csv(folder / "tickets" / "dev.csv")


def _read_csv(path):
  import csv  # noqa: PLC0415
  with open(path, newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


def _read_jsonl(pattern):
  rows = []
  for path in sorted(tf.io.gfile.glob(str(pattern))):
    with open(path, encoding="utf-8") as f:
      rows.extend(json.loads(line) for line in f)
  return rows


def _probabilities(records, names):
  """[records, names]: each record's probabilities (a dict by name, or a
  list in `names`' order)."""
  out = []
  for r in records:
    p = r["probabilities"]
    out.append([p[n] for n in names] if isinstance(p, dict) else p)
  return np.array(out, np.float64)


def _predictions(folder):
  """tools.predict's rows in input order."""
  rows = _read_jsonl(folder / "*.jsonl")
  return sorted(rows, key=lambda r: (r.get("file", ""), r.get("row", 0)))


def _token_ids(texts, spm_model):
  """[CLS] pieces [SEP], padded to SEQ, as the tools pack one text."""
  from data_pipeline.tokenization.factory import make_tokenizer  # noqa: PLC0415
  tokenizer = make_tokenizer(spm_model)
  word = np.zeros((len(texts), SEQ), np.int32)
  for i, pieces in enumerate(tokenizer.encode_batch(texts)):
    ids = [tokenizer.cls_id] + pieces[:SEQ - 2] + [tokenizer.sep_id]
    word[i, :len(ids)] = ids
  return dict(input_word_ids=word, input_mask=(word > 0).astype(np.int32),
              input_type_ids=np.zeros_like(word))


def _torch_logits(model, inputs):
  from tests.albert_tf.checkpoints.task_model_kit import torch_outputs
  return torch_outputs(model, inputs).logits.numpy()


def _softmax(logits):
  e = np.exp(logits - logits.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def test_the_page_marks_the_flows_and_every_size_is_on_it():
  text = _block(PRETRAINED) + "\n" + _block(CLASSIFIER)
  for page in SIZES:
    assert page in text, page


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["released", "huggingface"])
def test_a_pretrained_model_from_download_to_predictions(
    layout, tmp_path, spm_model):
  """Continued pretraining restores what the folder has and writes the
  folder's config; (released) the fine-tuned run evaluates on dev;
  predictions from the ONNX file over new.csv (dev's texts) are the run's
  dev probabilities."""
  source = tmp_path / "albert_tiny"
  if layout == "released":
    docs_commands.released_folder(source, CONFIG, spm_model)
    spm, restored = "30k-clean.model", (
        "official layout): restored encoder, MLM head, SOP head;")
  else:
    docs_commands.huggingface_folder(source, CONFIG, spm_model,
                                     "AlbertForMaskedLM")
    spm, restored = "spiece.model", (
        "huggingface layout): restored encoder, a fresh pooler (the source "
        "has none: the SOP head reads it), MLM head;")
  dev = _inputs(tmp_path)
  block = _block(PRETRAINED)
  if layout == "huggingface":
    # The layouts differ up to run_pretraining, which reads the folder.
    # From run_classifier on the block reads runs/domain, a run directory
    # of ours from either: the released variant runs that part.
    block = docs_commands.up_to(block, "tools.run_classifier")
  log = docs_commands.run(docs_commands.script(
      block, {"SOURCE": source, "SPM": f"$SOURCE/{spm}"}, SIZES), tmp_path)

  assert f"--init_checkpoint={source} ({restored}" in log, log[-3000:]
  domain = tmp_path / "runs" / "domain"
  assert tf.train.latest_checkpoint(str(domain))
  assert AlbertConfig.from_json_file(
      str(domain / "albert_config.json")) == CONFIG
  if layout == "huggingface":
    return
  run = tmp_path / "runs" / "tickets"
  labels = json.loads((run / "labels.json").read_text())["labels"]
  assert sorted(labels) == ["cardio", "other"]
  results = json.loads((run / "eval_results.json").read_text())
  assert 0.0 <= results["accuracy"] <= 1.0
  export = tmp_path / "runs" / "tickets_export"
  assert (export / "litert" / "model.tflite").stat().st_size > 0
  assert (export / "onnx" / "model.onnx").stat().st_size > 0
  preds = _predictions(tmp_path / "preds")
  assert len(preds) == len(dev)
  dev_records = _read_jsonl(run / "dev_predictions.jsonl")
  np.testing.assert_allclose(_probabilities(preds, labels),
                             _probabilities(dev_records, labels), atol=1e-4)
  assert [p["label"] for p in preds] == [
      labels[i] for i in _probabilities(dev_records, labels).argmax(-1)]


@pytest.mark.slow
def test_a_huggingface_classifier_in_and_back_out(tmp_path, spm_model):
  """As it is: dev predictions, accuracy and tools.predict's rows are
  PyTorch's. Trained further and converted: transformers' Auto class loads
  the folder with every key and gives the export's logits to 1e-5."""
  source = tmp_path / "albert-tickets"
  torch_model = docs_commands.huggingface_folder(
      source, CONFIG, spm_model, "AlbertForSequenceClassification",
      num_labels=2, id2label=dict(enumerate(HEAD_ORDER)),
      label2id={n: i for i, n in enumerate(HEAD_ORDER)})
  dev = _inputs(tmp_path)
  inputs = _token_ids([r["text"] for r in dev], spm_model)
  torch_probs = _softmax(_torch_logits(torch_model, inputs))
  docs_commands.run(docs_commands.script(
      _block(CLASSIFIER), {"SOURCE": source}, SIZES), tmp_path)

  as_is = tmp_path / "runs" / "as_is"
  assert json.loads((as_is / "labels.json").read_text())["labels"] == (
      HEAD_ORDER)
  np.testing.assert_allclose(
      _probabilities(_read_jsonl(as_is / "dev_predictions.jsonl"),
                     HEAD_ORDER), torch_probs, atol=1e-5)
  accuracy = np.mean([HEAD_ORDER[i] == r["team"]
                      for i, r in zip(torch_probs.argmax(-1), dev)])
  assert json.loads((as_is / "eval_results.json").read_text())[
      "accuracy"] == pytest.approx(accuracy)
  np.testing.assert_allclose(
      _probabilities(_predictions(tmp_path / "preds_as_is"), HEAD_ORDER),
      torch_probs, atol=1e-5)

  folder = tmp_path / "albert-tickets-more"
  model, info = transformers.AutoModelForSequenceClassification \
      .from_pretrained(folder, output_loading_info=True)
  assert not any(info[k] for k in ("missing_keys", "unexpected_keys",
                                    "mismatched_keys")), info
  assert model.config.id2label == dict(enumerate(HEAD_ORDER))
  from albert_tf.exports.saved_model_loading import load_saved_model  # noqa: PLC0415
  exported = load_saved_model(str(tmp_path / "runs" / "more_export"))
  ours = exported.signatures["token_ids"](
      **{k: tf.constant(v) for k, v in inputs.items()})["logits"].numpy()
  theirs = _torch_logits(model.eval(), inputs)
  np.testing.assert_allclose(theirs, ours, atol=1e-5)
  # Trained: not the source's logits any more.
  assert np.abs(_softmax(theirs) - torch_probs).max() > 1e-4
