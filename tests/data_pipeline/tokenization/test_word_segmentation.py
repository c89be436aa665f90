"""create_pretraining_data --word_segmenter=jieba: Chinese whole-word masking
on the Chinese corpus the tests write (whole jieba words masked, ids per
character unchanged, `none` = today's bytes, local == Beam, errors, one
dictionary load per process)."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

# Imported before any run (see test_wordpiece_pretraining_data).
import tensorflow as tf

from albert_common.errors import UserInputError
from data_pipeline.pretraining import tfrecord_schema
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.tokenization import word_segmentation
from data_pipeline.tokenization.wordpiece_tokenizer import WordPieceTokenizer
from data_pipeline.tokenization.wordpiece_tokenizer import is_cjk

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
SEQ = 64
PRED = 10
OPTIONS = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PRED)
CLS, SEP = 101, 102
TERMINALS = "。！？"


@pytest.fixture(scope="module")
def chinese(tmp_path_factory, chinese_kit):
  folder = tmp_path_factory.mktemp("zh_wwm")
  corpus = chinese_kit.write_corpus(folder / "zh.txt")
  tokens = chinese_kit.vocab_tokens(corpus)
  vocab_file = str(folder / "vocab_chinese.txt")
  with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return dict(corpus=corpus, vocab_file=vocab_file, tokens=tokens,
              folder=folder, rare_char=chinese_kit.rare_char)


def _read(paths):
  spec = tfrecord_schema.name_to_features(SEQ, PRED)
  records = list(tf.data.TFRecordDataset(paths).batch(1 << 20))
  parsed = tf.io.parse_example(records[0], spec)
  return {k: v.numpy() for k, v in parsed.items()}


def _run(chinese, folder, options=OPTIONS, **kwargs):
  out = chinese["folder"] / folder / "zh.tfrecord"
  stats = pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(out), None, options, dupe_factor=10,
      random_seed=5, num_workers=1, show_progress=False,
      vocab_file=chinese["vocab_file"], num_output_shards=2,
      piece_bytes=16 * 1024, **kwargs)
  return dict(stats=stats, features=_read(stats["outputs"]),
              folder=out.parent)


@pytest.fixture(scope="module")
def jieba_run(chinese):
  return _run(chinese, "jieba", word_segmenter="jieba")


@pytest.fixture(scope="module")
def none_run(chinese):
  return _run(chinese, "none")


def _original_ids(features):
  """input_ids with the masked positions' original ids put back."""
  ids = features["input_ids"].copy()
  weights = features["masked_lm_weights"] > 0
  rows = np.nonzero(weights)[0]
  ids[rows, features["masked_lm_positions"][weights]] = (
      features["masked_lm_ids"][weights])
  return ids


def _masked(features):
  masked = np.zeros(features["input_ids"].shape, bool)
  weights = features["masked_lm_weights"] > 0
  masked[np.nonzero(weights)[0],
         features["masked_lm_positions"][weights]] = True
  return masked


def _jieba_word_ids(sentence):
  """Per character of the (lowercased) sentence: the index of its
  multi-character Chinese word (a run of CJK characters inside one jieba
  word), or -1. jieba sees the sentence, as the pipeline's does."""
  word_ids, next_id = [], 0
  for word in word_segmentation.jieba_tokenizer().lcut(sentence):
    run = []
    for char in word + "\0":
      if char != "\0" and is_cjk(char):
        run.append(char)
        continue
      if len(run) > 1:
        word_ids.extend([next_id] * len(run))
        next_id += 1
      else:
        word_ids.extend([-1] * len(run))
      run = []
      if char != "\0":
        word_ids.append(-1)
  return word_ids


class _Sentences:
  """The corpus's sentences (lowercased) and their jieba words."""

  def __init__(self, corpus):
    with open(corpus, encoding="utf-8") as f:
      unique = sorted({line.strip() for line in f if line.strip()})
    self.sentences = [(s.lower(), _jieba_word_ids(s)) for s in unique]

  @functools.lru_cache(maxsize=None)
  def consistent(self, fragment, masks):
    """(found, whole): whether `fragment` (with a per-character mask
    string) occurs in a sentence where every multi-character word it
    touches is masked whole or not at all (whole), and at all (found)."""
    found = False
    for text, word_ids in self.sentences:
      start = text.find(fragment)
      while start >= 0:
        found = True
        seen = {}
        ok = True
        for k, mask in enumerate(masks):
          word = word_ids[start + k]
          if word >= 0 and seen.setdefault(word, mask) != mask:
            ok = False
            break
        if ok:
          return True, True
        start = text.find(fragment, start + 1)
    return found, False


def _fragments(tokens, ids, masked, rare_char):
  """The sentence fragments of an instance: (text, per-character masks).

  Segments split at [CLS]/[SEP], then after each sentence end; a token
  gives its characters ("##" dropped, [UNK] the corpus's rare character).
  """
  fragments, chars, masks = [], [], []
  for token_id, mask in zip(ids, masked):
    if token_id in (CLS, SEP):
      if chars:
        fragments.append(("".join(chars), "".join(masks)))
      chars, masks = [], []
      continue
    token = tokens[token_id]
    text = rare_char if token == "[UNK]" else token.replace("##", "")
    chars.extend(text)
    masks.extend(("1" if mask else "0") * len(text))
    if text in TERMINALS:
      fragments.append(("".join(chars), "".join(masks)))
      chars, masks = [], []
  return fragments


def _partially_masked_words(run, chinese, rows=400):
  """(instances with a partially masked multi-character jieba word,
  fragments with a masked multi-character word) in the first rows."""
  features = run["features"]
  sentences = _Sentences(chinese["corpus"])
  ids, masked = _original_ids(features), _masked(features)
  partial, whole_words = 0, 0
  for row in range(rows):
    length = int(features["input_mask"][row].sum())
    bad = False
    for text, masks in _fragments(chinese["tokens"], ids[row, :length],
                                  masked[row, :length], chinese["rare_char"]):
      found, whole = sentences.consistent(text, masks)
      assert found, text
      bad |= not whole
      whole_words += whole and "11" in masks
    partial += bad
  return partial, whole_words


def test_no_multi_character_word_partially_masked(jieba_run, none_run,
                                                  chinese):
  partial, whole_words = _partially_masked_words(jieba_run, chinese)
  assert partial == 0
  assert whole_words > 100
  # The check tells the difference: per character, words are cut.
  partial_none, _ = _partially_masked_words(none_run, chinese)
  assert partial_none > 50


def test_statistics(jieba_run, none_run):
  stats, features = jieba_run["stats"], jieba_run["features"]
  assert stats["settings"]["word_segmenter"] == "jieba"
  assert stats["settings"]["tokenizer"] == "wordpiece"
  assert "word_segmenter" not in none_run["stats"]["settings"]
  lengths = features["input_mask"].sum(axis=1)
  counts = features["masked_lm_weights"].sum(axis=1)
  assert abs(counts.sum() / lengths.sum() - 0.15) < 0.01
  assert abs(stats["masked_fraction"] - 0.15) < 0.01
  assert stats["instances"] == none_run["stats"]["instances"] > 2000
  labels = features["next_sentence_labels"][:, 0]
  assert abs(labels.mean() - 0.5) < 0.03


def test_ids_are_the_per_character_ids(jieba_run, none_run, chinese):
  """The same instances with the same ids; only masks and word boundaries
  differ. (By default a one-sentence chunk is split at a random word start,
  which moves with the words: the official rule for such a chunk keeps
  every instance the same.)"""
  same = np.all(_original_ids(jieba_run["features"]) ==
                _original_ids(none_run["features"]), axis=1)
  assert same.mean() > 0.9
  official = dict(options=InstanceOptions(
      max_seq_length=SEQ, max_predictions_per_seq=PRED,
      single_segment_random_document=True))
  jieba = _run(chinese, "jieba_official", word_segmenter="jieba",
               **official)["features"]
  none = _run(chinese, "none_official", **official)["features"]
  np.testing.assert_array_equal(_original_ids(jieba), _original_ids(none))
  for name in ("input_mask", "segment_ids", "next_sentence_labels"):
    np.testing.assert_array_equal(jieba[name], none[name])
  # token_boundary: jieba only removes word starts (inside Chinese words).
  boundary, boundary_none = jieba["token_boundary"], none["token_boundary"]
  assert np.all(boundary <= boundary_none)
  assert boundary.sum() < 0.8 * boundary_none.sum()
  assert not np.array_equal(_masked(jieba), _masked(none))


def test_encode_ids_equal_tokenizer_ids(chinese, multilingual_lines,
                                        wordpiece_kit):
  vocabularies = [(chinese["tokens"], True),
                  (wordpiece_kit.learn(True), True),
                  (wordpiece_kit.learn(False), False)]
  with open(chinese["corpus"], encoding="utf-8") as f:
    lines = f.read().splitlines()[:300] + multilingual_lines
  for tokens, lower in vocabularies:
    tokenizer = WordPieceTokenizer(None, do_lower_case=lower, tokens=tokens)
    segmenter = word_segmentation.JiebaWordStarts(tokenizer)
    for line in lines:
      ids, starts = segmenter.encode(line)
      assert ids == tokenizer.encode(line), line
      assert len(starts) == len(ids), line
  tokenizer = WordPieceTokenizer(None, tokens=chinese["tokens"])
  ids, starts = word_segmentation.JiebaWordStarts(tokenizer).encode(
      "我们应该保护环境，小明用iPhone拍照片。")
  assert tokenizer.convert_ids_to_tokens(ids)[:4] == ["我", "们", "应", "该"]
  assert starts[:4] == [True, False, True, False]
  pieces = tokenizer.convert_ids_to_tokens(ids)
  assert starts[pieces.index("##hone")] is False  # The WordPiece rule.


def _files(folder):
  return {name: open(os.path.join(folder, name), "rb").read()
          for name in sorted(os.listdir(folder))}


def test_none_is_todays_bytes(none_run, chinese):
  explicit = _run(chinese, "none_explicit", word_segmenter="none")
  ours, theirs = _files(explicit["folder"]), _files(none_run["folder"])
  assert sorted(ours) == sorted(theirs)
  for name in ours:
    if name != "zh.tfrecord.stats.json":  # Timings.
      assert ours[name] == theirs[name], name


def test_rerun_with_another_segmenter_rewrites_shards(jieba_run, chinese):
  out = chinese["folder"] / "switch" / "zh.tfrecord"
  common = dict(options=OPTIONS, dupe_factor=10, random_seed=5,
                num_workers=1, show_progress=False,
                vocab_file=chinese["vocab_file"], num_output_shards=2,
                piece_bytes=16 * 1024)
  pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(out), None, **common)
  pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(out), None, word_segmenter="jieba", **common)
  ours, theirs = _files(out.parent), _files(jieba_run["folder"])
  for name in ours:
    if name != "zh.tfrecord.stats.json":
      assert ours[name] == theirs[name], name


def test_dictionary_loads_once_per_process(chinese, tmp_path, monkeypatch,
                                           capfd):
  import jieba
  loads = []
  initialize = jieba.Tokenizer.initialize

  def counting(self, *args, **kwargs):
    loads.append(1)
    return initialize(self, *args, **kwargs)

  monkeypatch.setattr(jieba.Tokenizer, "initialize", counting)
  word_segmentation.jieba_tokenizer.cache_clear()
  try:
    for name in ("a", "b"):
      stats = pretraining_writer.create_pretraining_data(
          chinese["corpus"], str(tmp_path / f"{name}.tfrecord"), None,
          OPTIONS, dupe_factor=2, num_workers=1, show_progress=False,
          vocab_file=chinese["vocab_file"], piece_bytes=8 * 1024,
          word_segmenter="jieba")
      assert stats["pieces"] > 3
  finally:
    word_segmentation.jieba_tokenizer.cache_clear()
  assert len(loads) == 1
  err = capfd.readouterr().err
  assert "prefix dict" not in err and "Loading model" not in err


@pytest.mark.parametrize("value,flag,expected", [
    ("bogus", "vocab_file", "--word_segmenter=bogus: not one of none, jieba"),
    ("jieba", "spm_model_file",
     "--word_segmenter=jieba needs a WordPiece --vocab_file"),
])
def test_bad_word_segmenter_is_refused(chinese, spm_model, tmp_path, value,
                                       flag, expected):
  with pytest.raises(UserInputError, match=expected):
    pretraining_writer.create_pretraining_data(
        chinese["corpus"], str(tmp_path / "x.tfrecord"),
        spm_model if flag == "spm_model_file" else None, OPTIONS,
        vocab_file=chinese["vocab_file"], num_workers=1, show_progress=False,
        word_segmenter=value)
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


@pytest.mark.parametrize("args,expected", [
    (["--word_segmenter=bogus"],
     "error: --word_segmenter=bogus: not one of none, jieba"),
    (["--word_segmenter=jieba", "--spm_model_file=SPM"],
     "error: --word_segmenter=jieba needs a WordPiece --vocab_file (one id "
     "per Chinese character) and no --spm_model_file; --spm_model_file is "
     "given"),
])
def test_cli_bad_word_segmenter_one_line_before_tensorflow(
    args, expected, chinese, spm_model, tmp_path):
  args = [a.replace("SPM", spm_model) for a in args]
  out = tmp_path / "out" / "zh.tfrecord"
  result = _cli(f"--input_file={chinese['corpus']}", f"--output_file={out}",
                f"--vocab_file={chinese['vocab_file']}", "--progress=false",
                *args)
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines[-1] == "False", result.stderr[-3000:]  # No TensorFlow.
  errors = [line for line in lines if line.startswith("error:")]
  assert errors == [expected], result.stderr
  assert "Traceback" not in result.stderr


def test_cli_with_jieba_writes_the_library_bytes(chinese, jieba_run,
                                                 tmp_path):
  out = tmp_path / "zh.tfrecord"
  result = _cli(f"--input_file={chinese['corpus']}", f"--output_file={out}",
                f"--vocab_file={chinese['vocab_file']}",
                "--word_segmenter=jieba", "--max_seq_length=64",
                "--max_predictions_per_seq=10", "--dupe_factor=10",
                "--random_seed=5", "--num_output_shards=2",
                "--piece_bytes=16384", "--num_workers=1", "--progress=false")
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stderr.strip().splitlines()[-1] == "False"  # No TensorFlow.
  assert "prefix dict" not in result.stderr  # jieba's chatter.
  ours, theirs = _files(tmp_path), _files(jieba_run["folder"])
  assert sorted(ours) == sorted(theirs)
  # The shards (sidecar fingerprints hold input mtimes, read in whole
  # seconds once TensorFlow is imported, as here, and in ns without).
  shards = [name for name in ours if not name.endswith(".stats.json")]
  assert len(shards) == 2
  for name in shards:
    assert ours[name] == theirs[name], name


@pytest.mark.slow
def test_any_number_of_workers_same_bytes(jieba_run, chinese):
  out = chinese["folder"] / "jieba2" / "zh.tfrecord"
  pretraining_writer.create_pretraining_data(
      chinese["corpus"], str(out), None, OPTIONS, dupe_factor=10,
      random_seed=5, num_workers=2, show_progress=False,
      vocab_file=chinese["vocab_file"], num_output_shards=2,
      piece_bytes=16 * 1024, word_segmenter="jieba")
  ours, theirs = _files(out.parent), _files(jieba_run["folder"])
  assert sorted(ours) == sorted(theirs)
  for name in ours:
    if name != "zh.tfrecord.stats.json":
      assert ours[name] == theirs[name], name


@pytest.mark.slow
def test_beam_writes_the_local_bytes(jieba_run, chinese, tmp_path,
                                     monkeypatch):
  from data_pipeline.pretraining.beam import pipeline as beam_pipeline
  monkeypatch.setenv("PYTHONPATH", REPO)  # For the worker processes.
  out = tmp_path / "zh.tfrecord"
  stats = beam_pipeline.create_pretraining_data_beam(
      chinese["corpus"], str(out), None, OPTIONS, dupe_factor=10,
      random_seed=5, num_output_shards=2, piece_bytes=16 * 1024,
      vocab_file=chinese["vocab_file"], word_segmenter="jieba",
      runner="DirectRunner",
      pipeline_args=["--direct_num_workers=2",
                     "--direct_running_mode=multi_processing"])
  assert stats["instances"] == jieba_run["stats"]["instances"]
  assert stats["settings"]["word_segmenter"] == "jieba"
  ours, theirs = _files(tmp_path), _files(jieba_run["folder"])
  assert sorted(ours) == sorted(theirs)
  for name in ours:  # Shards and their sidecars (the run's JSON has timings).
    if name != "zh.tfrecord.stats.json":
      assert ours[name] == theirs[name], name


@pytest.mark.slow
def test_benchmark_prints_both_rows():
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.data.word_segmentation",
       "--megabytes=0.05", "--repeats=1", "--max_seq_length=64"],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=REPO))
  assert result.returncode == 0, result.stderr[-3000:]
  rows = {line.split("|")[1].strip(): line.split("|")
          for line in result.stdout.splitlines()
          if line.startswith(("| none", "| jieba"))}
  assert sorted(rows) == ["jieba", "none"]
  assert rows["none"][3] == rows["jieba"][3]  # Same instances.
  assert float(rows["jieba"][5]) == pytest.approx(0.15, abs=0.01)
