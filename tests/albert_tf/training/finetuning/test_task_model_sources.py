"""The fine-tuning tools start from a task model of their kind, head
included: a Hugging Face AlbertForSequenceClassification folder written by
transformers (its config.json, id2label and spiece.model are all the tool
is given) is scored as it is, exported, and trained on from where it
stands; a folder that does not fit stops the tool in one line with nothing
written."""

import json
import os
import shutil

import numpy as np
import pytest

from tests.albert_tf.checkpoints import tool_sources_kit as sources
from tests.albert_tf.checkpoints.task_model_kit import torch_outputs
from tests.albert_tf.training.finetuning import own_data_kit as kit

torch = pytest.importorskip("torch")

SEQ = sources.SEQ
HEAD_ORDER = list(sources.LABELS)  # not sorted
_run_tool = sources.run_tool


@pytest.fixture(scope="module")
def source(tmp_path_factory, english_corpus, spm_model):
  """An HF classifier folder (unsorted id2label) + a dev file and its ids."""
  root = tmp_path_factory.mktemp("hf_sources")
  folder = root / "hf_classifier"
  torch_model = sources.hf_folder(
      folder, "AlbertForSequenceClassification", spm_model, seed=3,
      max_position_embeddings=SEQ, num_labels=3,
      id2label=dict(enumerate(HEAD_ORDER)))
  rows = kit.classification_rows(kit.corpus_lines(english_corpus, 40), 2)
  dev = kit.write_csv(root / "dev.csv", rows, ("id", "text", "label"))
  logits = _torch_logits(torch_model, [r["text"] for r in rows], spm_model)
  probs = torch.softmax(torch.tensor(logits), -1).numpy()
  return dict(root=root, folder=folder, dev=dev, rows=rows, probs=probs)


def _torch_logits(torch_model, texts, spm_model):
  return torch_outputs(torch_model,
                       sources.text_ids(texts, spm_model)).logits.numpy()


def _common(source, out):
  return sources.classifier_args(source["folder"], source["dev"], out)


def test_hf_classifier_is_scored_as_it_is(source, tmp_path, caplog):
  """--do_eval alone: the folder's own config, tokenizer and labels; the
  dev predictions are PyTorch's probabilities, by label name, and the
  accuracy is PyTorch's."""
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  out = tmp_path / "eval"
  assert _run_tool("run_classifier", *_common(source, out),
                   "--do_eval") == 0
  np.testing.assert_allclose(sources.probabilities(out, HEAD_ORDER),
                             source["probs"], atol=1e-5)
  truth = [r["label"] for r in source["rows"]]
  torch_accuracy = np.mean([HEAD_ORDER[i] == t for i, t in
                            zip(source["probs"].argmax(-1), truth)])
  results = json.loads((out / "eval_results.json").read_text())
  assert results["accuracy"] == pytest.approx(torch_accuracy)
  assert json.loads((out / "labels.json").read_text())["labels"] == (
      HEAD_ORDER)
  assert ("classifier head from classifier.bias, classifier.weight" in
          caplog.text)


def test_hf_classifier_converted_to_ours_is_scored_as_it_is(
    source, tmp_path, caplog, capsys):
  """convert_checkpoint --output_format=ours writes the task model in our
  task layout (checkpoint, albert_config.json, labels.json in the head's
  order, conversion.json, spiece.model): that folder alone, given to
  --do_eval, scores PyTorch's probabilities, its head restored from our
  layout. A head our layout cannot tell apart (an official [1, H] head) is
  one line."""
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  ours = tmp_path / "ours"
  assert _run_tool("convert_checkpoint",
                   f"--input_checkpoint={source['folder']}",
                   f"--output_checkpoint={ours / 'ckpt'}",
                   "--output_format=ours") == 0
  assert sorted(os.listdir(ours)) == [
      "albert_config.json", "checkpoint", "ckpt.data-00000-of-00001",
      "ckpt.index", "conversion.json", "labels.json", "spiece.model"]
  assert json.loads((ours / "labels.json").read_text()) == {
      "task_type": "classification", "labels": HEAD_ORDER}
  out = tmp_path / "eval"
  args = _common(source, out)
  args[0] = f"--init_checkpoint={ours}"
  assert _run_tool("run_classifier", *args, "--do_eval") == 0
  np.testing.assert_allclose(sources.probabilities(out, HEAD_ORDER),
                             source["probs"], atol=1e-5)
  assert ("classifier head from classifier/dense/bias, "
          "classifier/dense/kernel") in caplog.text
  # run_race's head and an STS-B regression head share the official names.
  from albert_tf.checkpoints import configs
  from albert_tf.checkpoints import writers
  from albert_tf.checkpoints.reading import readers
  config = configs.load_albert_config(str(ours / "albert_config.json"))
  arrays = dict(readers.read_weights(str(ours), config).arrays)
  arrays.update({"multiple_choice/dense/kernel": np.ones((32, 1), np.float32),
                 "multiple_choice/dense/bias": np.ones(1, np.float32)})
  official = tmp_path / "official" / "model.ckpt"
  writers.write_official(arrays, config, str(official), "multiple_choice")
  capsys.readouterr()
  assert _run_tool("convert_checkpoint",
                   f"--albert_config_file={ours / 'albert_config.json'}",
                   f"--input_checkpoint={official}",
                   f"--output_checkpoint={tmp_path / 'bad' / 'ckpt'}",
                   "--output_format=ours") == 1
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "cannot tell apart" in err[0], err
  assert not (tmp_path / "bad").exists()


def test_training_continues_from_the_hf_head(source, tmp_path, caplog):
  """--do_train from the folder, the train file's labels matched to the
  head's by name: one update at a learning rate of 1e-12 (no weight moves
  by more than ~1e-11: the model as it starts) predicts what PyTorch
  does. --init_head=false: a fresh head on its encoder, said in one line."""
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  runs = {}
  for init_head in ("true", "false"):
    out = tmp_path / f"train_{init_head}"
    assert _run_tool("run_classifier", *_common(source, out),
                     f"--train_file={source['dev']}", "--do_train",
                     "--do_eval", "--train_step=1", "--warmup_step=0",
                     "--learning_rate=1e-12", "--save_checkpoints_steps=1",
                     "--train_batch_size=8", "--seed=0",
                     f"--init_head={init_head}") == 0
    runs[init_head] = sources.probabilities(out, HEAD_ORDER)
  np.testing.assert_allclose(runs["true"], source["probs"], atol=1e-5)
  assert np.abs(runs["false"] - source["probs"]).max() > 1e-2
  assert "--init_head=false: a fresh classifier head on the encoder of" in (
      caplog.text)


def test_sources_that_do_not_fit_are_one_line(source, tmp_path, capsys):
  """Each: exit 1, one "error:" line naming the problem, no file under
  --output_dir."""
  root = source["root"]
  qa = root / "qa"
  if not qa.exists():
    sources.hf_folder(qa, "AlbertForQuestionAnswering",
                      source["folder"] / "spiece.model",
                      max_position_embeddings=SEQ)
  bad_dev = tmp_path / "bad.csv"
  kit.write_csv(bad_dev, [dict(r, label="bird") if i == 0 else r
                          for i, r in enumerate(source["rows"])],
                ("id", "text", "label"))
  partial = tmp_path / "partial"
  shutil.copytree(source["folder"], partial)
  from safetensors.numpy import load_file
  from safetensors.numpy import save_file
  tensors = load_file(str(partial / "model.safetensors"))
  del tensors["classifier.bias"]
  save_file(tensors, str(partial / "model.safetensors"),
            metadata={"format": "pt"})
  disagreeing = tmp_path / "disagreeing"
  shutil.copytree(source["folder"], disagreeing)
  values = json.loads((disagreeing / "config.json").read_text())
  values["hidden_size"] = 64
  (disagreeing / "config.json").write_text(json.dumps(values))
  cases = {
      "qa": ([f"--init_checkpoint={qa}"], "AlbertForQuestionAnswering head"),
      "labels": ([f"--dev_file={bad_dev}"], "does not know: bird"),
      "partial": ([f"--init_checkpoint={partial}"],
                  "partial head: classifier.weight without "
                  "classifier.bias"),
      "config": ([f"--init_checkpoint={disagreeing}"], "does not fit"),
  }
  for name, (args, message) in cases.items():
    out = tmp_path / f"out_{name}"
    capsys.readouterr()
    code = _run_tool("run_classifier", *_common(source, out), *args,
                     "--do_eval")
    assert message in sources.error_line(capsys, code, out), name


@pytest.mark.slow
def test_official_classifier_folder_is_scored_and_exported(source, tmp_path,
                                                           spm_model):
  """An official run_classifier.py checkpoint folder as released (no
  `checkpoint` state file) with albert_config.json, the SentencePiece
  model and labels.txt beside it: run_classifier --do_eval --export_dir
  scores it as our model loaded from it does, and the export answers with
  its label names. Without labels.txt nor --label_names: one line."""
  import tensorflow as tf

  from albert_tf import exports
  from albert_tf import models
  from albert_tf.checkpoints import weight_loading
  from albert_tf.checkpoints.task_models.task_heads import HeadRequest
  from albert_tf.config import AlbertConfig
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from tests.albert_tf.checkpoints.test_task_models_in import write_official
  folder = tmp_path / "official"
  folder.mkdir()
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ)
  config.to_json_file(str(folder / "albert_config.json"))
  shutil.copy(spm_model, folder / "30k-clean.model")
  write_official(str(folder / "model.ckpt-best"), config,
                 {"output_weights": (3, 32), "output_bias": (3,)}, seed=4)
  (folder / "labels.txt").write_text("\n".join(HEAD_ORDER) + "\n")
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  assert _run_tool("run_classifier", *_common(source, out),
                   f"--init_checkpoint={folder}", "--do_eval",
                   f"--export_dir={export_dir}") == 0
  model = models.AlbertClassifier(AlbertEncoder(config), 3)
  weight_loading.load_weights_into(model, str(folder),
                                   head=HeadRequest(labels=HEAD_ORDER))
  texts = [r["text"] for r in source["rows"]]
  logits = model(sources.text_ids(texts, spm_model))["logits"].numpy()
  want = tf.nn.softmax(logits).numpy()
  np.testing.assert_allclose(sources.probabilities(out, HEAD_ORDER), want,
                             atol=1e-5)
  records = sources.read_jsonl(out / "dev_predictions.jsonl")
  serving = exports.load_saved_model(str(export_dir)).signatures[
      "serving_default"]
  labels = serving(sentences=tf.constant(texts[:6]))["label"].numpy()
  assert [n.decode() for n in labels.reshape(-1)] == [
      r["label"] for r in records[:6]]
  (folder / "labels.txt").unlink()
  assert _run_tool("run_classifier", *_common(source, tmp_path / "none"),
                   f"--init_checkpoint={folder}", "--do_eval") == 1
  assert _run_tool("run_classifier", *_common(source, tmp_path / "named"),
                   f"--init_checkpoint={folder}", "--do_eval",
                   "--label_names=" + ",".join(HEAD_ORDER)) == 0


def test_hf_regression_and_multi_label_heads_by_problem_type(
    source, tmp_path, english_corpus, spm_model):
  """problem_type regression / multi_label_classification makes the run's
  task type: scores are PyTorch's logits, multi-label probabilities its
  sigmoids, by label name."""
  lines = kit.corpus_lines(english_corpus, 24, seed=3)
  cases = {
      "regression": (dict(num_labels=1, problem_type="regression"),
                     kit.regression_rows(lines, 1), None),
      "multi_label": (dict(num_labels=3, id2label=dict(enumerate(HEAD_ORDER)),
                           problem_type="multi_label_classification"),
                      kit.multi_label_rows(lines, 2),
                      lambda r: dict(r, label="|".join(r["label"]) or "[]")),
  }
  for name, (kwargs, rows, convert) in cases.items():
    folder = tmp_path / name
    torch_model = sources.hf_folder(
        folder, "AlbertForSequenceClassification", spm_model, seed=6,
        max_position_embeddings=SEQ, **kwargs)
    rows = [dict(r, id=f"r{i}") for i, r in enumerate(rows)]
    dev = kit.write_csv(tmp_path / f"{name}.csv", rows, ("id", "text",
                                                         "label"), convert)
    out = tmp_path / f"out_{name}"
    assert _run_tool("run_classifier", *sources.classifier_args(
        folder, dev, out, "--do_eval")) == 0
    logits = _torch_logits(torch_model, [r["text"] for r in rows], spm_model)
    if name == "regression":
      got = np.array([r["score"] for r in sources.read_jsonl(
          out / "dev_predictions.jsonl")])
      np.testing.assert_allclose(got, logits[:, 0], atol=1e-5)
    else:
      np.testing.assert_allclose(sources.probabilities(out, HEAD_ORDER),
                                 1 / (1 + np.exp(-logits)), atol=1e-5)
    assert json.loads((out / "labels.json").read_text())["task_type"] == name
