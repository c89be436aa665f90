"""Shared pieces of the tests that give the fine-tuning tools task models
of other layouts (test_tool_sources_*.py, finetuning/test_task_model_
sources*.py, test_own_task_sources*.py): a tiny config, a transformers
folder as a user holds one, the ids the tools feed a model for a text, dev
files, the tool run in-process and its one-line refusals."""

import json
import os
import shutil

import numpy as np
import tensorflow as tf

from albert_tf.config import AlbertConfig

SEQ = 32
LABELS = ("volcano", "fruit", "music")  # own_data_kit's labels, unsorted
CONFIG = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64,
                      hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)


def run_tool(tool, *args):
  """tools.<tool>'s main in this process; its exit status."""
  from tests.albert_tf.training.finetuning import own_data_kit
  return own_data_kit.run_tool(tool, *args)


def hf_folder(folder, model_class, spm_model, seed=0, **kwargs):
  """transformers' `model_class` (vocab 2000, `kwargs` for its config)
  saved at `folder` by save_pretrained, with `spm_model` as its
  spiece.model; returns the torch model in eval mode."""
  from tests.albert_tf.checkpoints.test_task_models_in import save_hf
  torch_model = save_hf(model_class, folder, seed=seed, vocab_size=2000,
                        **kwargs)
  shutil.copy(spm_model, folder / "spiece.model")
  return torch_model


def error_line(capsys, code, out):
  """The one "error:" line of a tool's refusal (`code`, its exit status,
  must be 1): the last line of stderr, nothing written under `out`."""
  err = capsys.readouterr().err
  lines = [line for line in err.splitlines() if line.startswith("error:")]
  assert code == 1, err
  assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err
  assert not out.exists() or not any(
      files for _, _, files in os.walk(out)), list(os.walk(out))
  return lines[0]


def eval_metrics(folder):
  """The numbers of a run's eval_results.json, its step aside."""
  results = json.loads((folder / "eval_results.json").read_text())
  return {k: v for k, v in results.items()
          if k != "step" and isinstance(v, (int, float))}


def randomized(model, seed):
  """`model` with every weight moved by N(0, 0.05): no bias is 0."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  return model


def text_ids(texts, spm_model, seq=SEQ):
  """[CLS] pieces [SEP] of each text, as run_classifier feeds them: the
  int32 inputs dict [n, seq]."""
  from data_pipeline.tokenization.factory import make_tokenizer
  tokenizer = make_tokenizer(spm_model)
  word = np.zeros((len(texts), seq), np.int32)
  for i, pieces in enumerate(tokenizer.encode_batch(list(texts))):
    ids = [tokenizer.cls_id] + pieces[:seq - 2] + [tokenizer.sep_id]
    word[i, :len(ids)] = ids
  return dict(input_word_ids=word, input_mask=(word > 0).astype(np.int32),
              input_type_ids=np.zeros_like(word))


def classifier_dev(root, english_corpus, count=24):
  """(rows, dev.csv path) of own-data classification rows (LABELS)."""
  from tests.albert_tf.training.finetuning import own_data_kit as kit
  rows = kit.classification_rows(kit.corpus_lines(english_corpus, count), 2)
  return rows, kit.write_csv(root / "dev.csv", rows, ("id", "text", "label"))


def classifier_args(init, dev, out, *extra):
  return [f"--init_checkpoint={init}", f"--dev_file={dev}",
          "--text_a_column=text", "--label_column=label",
          f"--output_dir={out}", f"--max_seq_length={SEQ}",
          "--length_buckets=none", *extra]


def train_args(train_file, *extra):
  """1 update at a tiny learning rate: a run that trains and changes
  (almost) nothing."""
  return [f"--train_file={train_file}", "--do_train", "--train_step=1",
          "--warmup_step=0", "--learning_rate=1e-12",
          "--save_checkpoints_steps=1", "--train_batch_size=4", "--seed=0",
          *extra]


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def probabilities(out, names=LABELS):
  """run_classifier's dev probabilities [n, C] in `names`' order."""
  return np.array([[r["probabilities"][n] for n in names]
                   for r in read_jsonl(out / "dev_predictions.jsonl")])


def serving_token_ids(export_dir, inputs):
  """The export's token_ids signature on int32 `inputs`: name -> array."""
  from albert_tf import exports
  signature = exports.load_saved_model(str(export_dir)).signatures[
      "token_ids"]
  out = signature(**{k: tf.constant(v, tf.int32) for k, v in inputs.items()})
  return {k: v.numpy() for k, v in out.items()}


def squad_files(root, english_corpus, v2, count=10):
  """A SQuAD dev file (test_squad_finetuning's synthetic questions)."""
  from tests.albert_tf.training.finetuning.test_squad_finetuning import _filler
  from tests.albert_tf.training.finetuning.test_squad_finetuning import (
    _squad_json,
  )
  path = root / f"dev-v{2 if v2 else 1}.json"
  path.write_text(json.dumps(_squad_json(_filler(english_corpus), count, v2,
                                         1)))
  return str(path)


SQUAD_FLAGS = (f"--max_seq_length={SEQ * 2}", "--doc_stride=32",
               "--max_query_length=16")


def squad_features(predict_file, spm_model, v2=False):
  """(examples, features, inputs dict) as run_squad makes them."""
  from data_pipeline.tasks.squad import examples as squad_examples
  from data_pipeline.tasks.squad import features as squad_features_lib
  from data_pipeline.tokenization.factory import make_tokenizer
  examples = squad_examples.read_squad_examples(predict_file, False, v2)
  features = squad_features_lib.convert_examples_to_features(
      examples, make_tokenizer(spm_model), max_seq_length=SEQ * 2,
      doc_stride=32, max_query_length=16)
  arrays = squad_features_lib.features_to_arrays(features, False)
  return examples, features, arrays


def squad_predictions(examples, features, arrays, start, end):
  """predictions.json of the start / end logits [n, seq] (v1.1)."""
  from data_pipeline.tasks.squad import postprocess
  results = {int(u): {"start_logits": s, "end_logits": e}
             for u, s, e in zip(arrays["unique_ids"], start, end)}
  return dict(postprocess.postprocess_v1(examples, features,
                                         results).predictions)


def squad_tool_equals(folder, predict_file, tmp_path, examples, features,
                      arrays, inputs, start, end):
  """run_squad --do_eval --export_dir from `folder`: predictions.json is the
  post-processing of the source's start / end logits [n, seq], and the
  export's token_ids outputs equal them to 1e-5. Returns the flags common
  to a further run (source, predict file, sizes)."""
  common = [f"--init_checkpoint={folder}", f"--predict_file={predict_file}",
            *SQUAD_FLAGS]
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  assert run_tool("run_squad", *common, f"--output_dir={out}",
                  "--do_eval", f"--export_dir={export_dir}") == 0
  assert json.loads((out / "predictions.json").read_text()) == (
      squad_predictions(examples, features, arrays, start, end))
  served = serving_token_ids(export_dir, inputs)
  np.testing.assert_allclose(served["start_logits"], start, atol=1e-5)
  np.testing.assert_allclose(served["end_logits"], end, atol=1e-5)
  return common
