"""create_pretraining_data --vocab_file: a WordPiece vocabulary in BERT's
Chinese layout on a Chinese corpus the test writes (statistics, whole words,
precedence, errors, local == Beam bytes)."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from data_pipeline.pretraining import tfrecord_schema
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
SEQ = 64
PRED = 10
OPTIONS = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PRED)

@pytest.fixture(scope="module")
def chinese(tmp_path_factory, chinese_kit):
  folder = tmp_path_factory.mktemp("zh")
  corpus = chinese_kit.write_corpus(folder / "zh.txt")
  tokens = chinese_kit.vocab_tokens(corpus)
  vocab_file = str(folder / "vocab_chinese.txt")
  with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return dict(corpus=corpus, vocab_file=vocab_file, tokens=tokens,
              folder=folder)


def _read(paths):
  spec = tfrecord_schema.name_to_features(SEQ, PRED)
  records = list(tf.data.TFRecordDataset(paths).batch(1 << 20))
  parsed = tf.io.parse_example(records[0], spec)
  return {k: v.numpy() for k, v in parsed.items()}


@pytest.fixture(scope="module")
def local_run(chinese):
  out = chinese["folder"] / "local" / "zh.tfrecord"
  stats = pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(out), None, OPTIONS, dupe_factor=10,
      random_seed=5, num_workers=1, show_progress=False,
      vocab_file=chinese["vocab_file"], num_output_shards=2,
      piece_bytes=16 * 1024)
  return dict(stats=stats, features=_read(stats["outputs"]),
              folder=out.parent)


def test_statistics_as_for_sentencepiece(local_run):
  stats, features = local_run["stats"], local_run["features"]
  assert stats["documents"] == 60 and stats["instances"] > 2000
  assert stats["settings"]["tokenizer"] == "wordpiece"
  lengths = features["input_mask"].sum(axis=1)
  counts = features["masked_lm_weights"].sum(axis=1)
  assert abs(counts.sum() / lengths.sum() - 0.15) < 0.01
  assert abs(stats["masked_fraction"] - 0.15) < 0.01
  fractions = stats["replacement_fractions"]
  assert abs(fractions["mask"] - 0.8) < 0.02
  assert abs(fractions["keep"] - 0.1) < 0.02
  assert abs(fractions["random"] - 0.1) < 0.02
  labels = features["next_sentence_labels"][:, 0]
  assert abs(labels.mean() - 0.5) < 0.03
  assert stats["swapped_fraction"] == pytest.approx(labels.mean())
  np.testing.assert_allclose(stats["ngram_draw_fractions"][1:],
                             [6 / 11, 3 / 11, 2 / 11], atol=0.02)


def test_ids_are_the_vocabularys(local_run, chinese):
  features = local_run["features"]
  tokens = chinese["tokens"]
  ids = features["input_ids"][features["input_mask"] > 0]
  assert ids.max() < len(tokens)
  assert np.all(features["input_ids"][:, 0] == 101)  # [CLS] by name.
  # Two [SEP]s an instance (a random replacement may add one).
  assert np.count_nonzero(ids == 102) >= 2 * len(features["input_ids"])
  assert np.count_nonzero(ids == 100) > 0  # The rare character: [UNK].
  used = {tokens[i] for i in np.unique(ids)}
  assert {"ip", "##hone", "gp", "##u", "20", "##24", "[MASK]"} <= used


def test_no_wordpiece_word_partially_masked(local_run, chinese):
  """Whole-word masking with the official rule: a "##" piece belongs to the
  word before it (here, not across [CLS]/[SEP]: see mlm_masking); every
  word is masked whole or not at all."""
  features = local_run["features"]
  continuation = np.array([t.startswith("##") for t in chinese["tokens"]])
  multi_piece_words = 0
  for row in range(len(features["input_ids"])):
    original = features["input_ids"][row].copy()
    weights = features["masked_lm_weights"][row] > 0
    positions = features["masked_lm_positions"][row][weights]
    original[positions] = features["masked_lm_ids"][row][weights]
    masked = np.zeros(SEQ, bool)
    masked[positions] = True
    length = int(features["input_mask"][row].sum())
    words, after_special = [], True
    for i in range(length):
      if original[i] in (101, 102):
        after_special = True
        continue
      if continuation[original[i]] and not after_special:
        words[-1].append(i)
      else:
        words.append([i])
      after_special = False
    for word in words:
      assert len(set(masked[word])) == 1, (row, word)
      multi_piece_words += len(word) > 1 and masked[word[0]]
  assert multi_piece_words > 20


def test_spm_model_file_wins_with_one_log_line(chinese, spm_model, tmp_path,
                                               caplog):
  options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=5)
  common = dict(options=options, dupe_factor=1, num_workers=1,
                show_progress=False)
  spm_only = pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(tmp_path / "a.tfrecord"), spm_model, **common)
  with caplog.at_level(logging.INFO, logger="absl"):
    both = pretraining_writer.create_pretraining_data(
        chinese["corpus"], str(tmp_path / "b.tfrecord"), spm_model,
        vocab_file=chinese["vocab_file"], **common)
  ignored = [r for r in caplog.records if "is ignored" in r.getMessage()]
  assert len(ignored) == 1
  assert "tokenizer" not in both["settings"]
  with open(tmp_path / "a.tfrecord", "rb") as a:
    with open(tmp_path / "b.tfrecord", "rb") as b:
      assert a.read() == b.read()
  assert spm_only["instances"] == both["instances"] > 0


def _config(tmp_path, vocab_size):
  path = tmp_path / "albert_config.json"
  path.write_text(json.dumps({"vocab_size": vocab_size}))
  return str(path)


def test_vocab_larger_than_config_is_refused(chinese, tmp_path):
  size = len(chinese["tokens"])
  with pytest.raises(UserInputError, match=(
      f"--vocab_file=.*vocab_chinese.txt has {size} tokens, more than "
      f"vocab_size={size - 1}")):
    pretraining_writer.create_pretraining_data(
        chinese["corpus"], str(tmp_path / "x.tfrecord"), None, OPTIONS,
        vocab_file=chinese["vocab_file"], num_workers=1,
        show_progress=False,
        albert_config_file=_config(tmp_path, size - 1))
  assert not list(tmp_path.glob("x.tfrecord*"))


def _cli(*args):
  """The CLI; stderr's last line says whether TensorFlow was imported."""
  code = ("import runpy, sys\n"
          f"sys.argv = ['create_pretraining_data'] + {list(args)!r}\n"
          "try:\n"
          "  runpy.run_module('tools.create_pretraining_data', "
          "run_name='__main__')\n"
          "finally:\n"
          "  print('tensorflow' in sys.modules, file=sys.stderr)\n")
  return subprocess.run([sys.executable, "-c", code], cwd=REPO,
                        capture_output=True, text=True, timeout=120,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                 PYTHONPATH=REPO))


def test_cli_end_to_end_with_vocab_file(chinese, tmp_path):
  out = str(tmp_path / "cli.tfrecord")
  result = _cli(f"--input_file={chinese['corpus']}", f"--output_file={out}",
                f"--vocab_file={chinese['vocab_file']}",
                "--max_seq_length=64", "--max_predictions_per_seq=10",
                "--dupe_factor=1", "--num_workers=1", "--progress=false",
                "--albert_config_file=" +
                _config(tmp_path, len(chinese["tokens"])))
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stderr.strip().splitlines()[-1] == "False"
  assert json.load(open(out + ".stats.json"))["instances"] > 100


@pytest.mark.parametrize("case", ["neither", "no_cls", "no_mask", "size",
                                  "missing"])
def test_cli_bad_vocabulary_one_line_before_tensorflow(case, chinese,
                                                       tmp_path):
  tokens = chinese["tokens"]
  args = [f"--vocab_file={chinese['vocab_file']}"]
  if case == "neither":
    args, expected = [], "give --spm_model_file (SentencePiece) or --vocab"
  elif case in ("no_cls", "no_mask"):
    drop = "[CLS]" if case == "no_cls" else "[MASK]"
    bad = tmp_path / "bad_vocab.txt"
    bad.write_text("\n".join(t for t in tokens if t != drop) + "\n",
                   encoding="utf-8")
    args = [f"--vocab_file={bad}"]
    expected = f"vocab file {bad} has no {drop} token"
  elif case == "size":
    args.append("--albert_config_file=" + _config(tmp_path, 21128 // 100))
    expected = f"has {len(tokens)} tokens, more than vocab_size=211"
  else:
    args = [f"--vocab_file={tmp_path / 'nope.txt'}"]
    expected = f"vocab file not found: {tmp_path / 'nope.txt'}"
  out = tmp_path / "out" / "zh.tfrecord"
  result = _cli(f"--input_file={chinese['corpus']}", f"--output_file={out}",
                "--progress=false", *args)
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines[-1] == "False", result.stderr[-3000:]  # No TensorFlow.
  errors = [line for line in lines if line.startswith("error:")]
  assert errors == [lines[-2]] and expected in errors[0], result.stderr
  assert "Traceback" not in result.stderr
  assert not [p for p in out.parent.glob("*") if "zh.tfrecord" in p.name]


def _files(folder):
  return {name: open(os.path.join(folder, name), "rb").read()
          for name in sorted(os.listdir(folder))}


@pytest.mark.slow
def test_beam_writes_the_local_bytes(local_run, chinese, tmp_path,
                                     monkeypatch):
  from data_pipeline.pretraining.beam import pipeline as beam_pipeline
  monkeypatch.setenv("PYTHONPATH", REPO)  # For the worker processes.
  out = tmp_path / "zh.tfrecord"
  stats = beam_pipeline.create_pretraining_data_beam(
      chinese["corpus"], str(out), None, OPTIONS, dupe_factor=10,
      random_seed=5, num_output_shards=2, piece_bytes=16 * 1024,
      vocab_file=chinese["vocab_file"], runner="DirectRunner",
      pipeline_args=["--direct_num_workers=2",
                     "--direct_running_mode=multi_processing"])
  assert stats["instances"] == local_run["stats"]["instances"]
  ours, theirs = _files(tmp_path), _files(local_run["folder"])
  assert sorted(ours) == sorted(theirs)
  for name in ours:  # Shards and their sidecars (the run's JSON has timings).
    if name != "zh.tfrecord.stats.json":
      assert ours[name] == theirs[name], name
  assert len(ours["zh.tfrecord-00000-of-00002"]) > 50_000
