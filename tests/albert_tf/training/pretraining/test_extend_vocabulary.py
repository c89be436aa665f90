"""tools.extend_vocabulary: a stdlib-docstring model (SentencePiece trained
with our trainer's defaults, a tiny checkpoint made by our code) extended
with the pieces of a hand-written clinical corpus (English and Chinese).

The commands run in the module fixture `runs`, two processes at a time;
the tests assert on their results and on the folder written.
"""

import concurrent.futures
import dataclasses
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining import vocabulary_extension as vext
from data_pipeline.tokenization import sentencepiece_tokenizer as spt
from data_pipeline.tokenization import vocabulary_extension as vx
from data_pipeline.tokenization import wordpiece_tokenizer as wpt
from tests.albert_tf.training.pretraining import domain_text

_REPO = os.path.abspath(os.path.join(__file__, "../../../../.."))
# 29 of them are the characters of the corpus that the old model reads as
# <unk> (28 Chinese characters and "。"): they come first.
N = 60
V = 2000
UNKNOWN_CHARACTERS = 29


def _run(*args):
  return subprocess.run([sys.executable, "-m", "tools.extend_vocabulary",
                         *args], cwd=_REPO, capture_output=True, text=True,
                        timeout=600, check=False)


def _checkpoint(folder, config):
  """A pretrainer with distinct random weights: our checkpoint + config."""
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  prefix = tf.train.Checkpoint(model=model).write(str(folder / "ckpt"))
  config_file = str(folder / "albert_config.json")
  config.to_json_file(config_file)
  return prefix, config_file


@pytest.fixture(scope="module")
def runs(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("extend")
  config = AlbertConfig(vocab_size=V, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32)
  prefix, config_file = _checkpoint(root, config)
  wrong = str(root / "wrong.json")
  dataclasses.replace(config, vocab_size=V + 1).to_json_file(wrong)
  domain = domain_text.write_corpus(str(root / "domain.txt"),
                                    domain_text.clinical_sentences(300))
  empty = str(root / "empty.txt")
  with open(empty, "w", encoding="utf-8") as f:
    f.write("\n  \n\n")
  (root / "taken").mkdir()
  common = [f"--init_checkpoint={prefix}", f"--spm_model_file={spm_model}",
            f"--input_file={domain}"]
  commands = {
      "extend": common + [f"--albert_config_file={config_file}",
                          f"--new_pieces={N}", f"--output_dir={root / 'out'}"],
      "zero": common + [f"--albert_config_file={config_file}",
                        "--new_pieces=0", f"--output_dir={root / 'zero'}"],
      "too_many": common + [f"--albert_config_file={config_file}",
                            "--new_pieces=3000",
                            f"--output_dir={root / 'too_many'}"],
      "mismatch": common + [f"--albert_config_file={wrong}",
                            f"--new_pieces={N}",
                            f"--output_dir={root / 'mismatch'}"],
      "empty": [f"--init_checkpoint={prefix}",
                f"--spm_model_file={spm_model}", f"--input_file={empty}",
                f"--albert_config_file={config_file}", f"--new_pieces={N}",
                f"--output_dir={root / 'empty_out'}"],
      "exists": common + [f"--albert_config_file={config_file}",
                          f"--new_pieces={N}",
                          f"--output_dir={root / 'taken'}"],
  }
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    done = dict(zip(commands, pool.map(lambda a: _run(*a),
                                       commands.values())))
  return dict(done=done, root=root, config=config, prefix=prefix,
              spm=spm_model, domain=domain, out=str(root / "out"),
              config_file=config_file)


@pytest.fixture(scope="module")
def extended(runs):
  """The written folder: tokenizers, report, arrays before and after."""
  assert runs["done"]["extend"].returncode == 0, runs["done"][
      "extend"].stderr[-3000:]
  out = runs["out"]
  new_config = AlbertConfig.from_json_file(os.path.join(out,
                                                        "albert_config.json"))
  with open(os.path.join(out, vext.REPORT_NAME), encoding="utf-8") as f:
    report = json.load(f)
  old = converter.read_weights(runs["prefix"], runs["config"]).arrays
  new = converter.read_weights(out, new_config).arrays
  return dict(
      runs, config=new_config, report=report, old=old, new=new,
      old_tok=spt.SentencePieceTokenizer(runs["spm"]),
      new_tok=spt.SentencePieceTokenizer(
          os.path.join(out, os.path.basename(runs["spm"]))),
      pieces=[p["piece"] for p in report["pieces"]])


def test_folder_config_and_summary_line(extended):
  assert sorted(os.listdir(extended["out"])) == [
      "albert_2k.model", "albert_config.json", "checkpoint",
      "data_settings.json", "model.ckpt.data-00000-of-00001",
      "model.ckpt.index", vext.REPORT_NAME]
  assert extended["config"].vocab_size == V + N
  assert extended["new_tok"].vocab_size == V + N
  line = extended["done"]["extend"].stdout.strip().splitlines()[-1]
  assert line.startswith(f"wrote {extended['out']}: vocab_size {V} -> "
                         f"{V + N}; domain pieces per word ")
  before, after = (extended["report"][k]["unk_share"]
                   for k in ("domain_before", "domain_after"))
  assert after == 0 < before, (before, after)
  assert line.endswith(f", <unk> share of pieces {before:.1%} -> 0.0% "
                       f"({UNKNOWN_CHARACTERS} characters added as pieces)"
                       ), line
  # What a run continued from the folder compares its records with (the
  # source, a bare prefix, has no data_settings.json of its own).
  with open(os.path.join(extended["out"], "data_settings.json")) as f:
    assert json.load(f) == {"do_lower_case": True,
                            "tokenizer": "sentencepiece"}


def test_unknown_characters_come_first(extended):
  """Every character of the corpus that the old model reads as <unk> (the
  Chinese characters and "。"; "，" is "," after NFKC) is a
  single-character piece, most frequent first, before the ranked pieces."""
  pieces = extended["pieces"]
  sentences = domain_text.clinical_sentences(300)
  old = extended["old_tok"].sp_model
  unknown = {c for s in sentences for c in extended["old_tok"].preprocess(s)
             if not c.isspace() and old.unk_id() in old.EncodeAsIds(c)}
  assert len({c for c in unknown if "\u4e00" <= c <= "\u9fff"}) == 28
  assert len(unknown) == UNKNOWN_CHARACTERS
  assert set(pieces[:UNKNOWN_CHARACTERS]) == unknown
  counts = [sum(s.count(c) for s in sentences)
            for c in pieces[:UNKNOWN_CHARACTERS]]
  assert counts == sorted(counts, reverse=True)
  assert extended["report"]["characters_added"] == UNKNOWN_CHARACTERS
  assert not set(pieces[UNKNOWN_CHARACTERS:]) & unknown


def test_old_ids_and_pieces_are_unchanged(extended, english_corpus):
  old, new = extended["old_tok"].sp_model, extended["new_tok"].sp_model
  assert [old.IdToPiece(i) for i in range(V)] == [
      new.IdToPiece(i) for i in range(V)]
  assert [old.GetScore(i) for i in range(V)] == [
      new.GetScore(i) for i in range(V)]
  for piece in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"):
    assert new.PieceToId(piece) == old.PieceToId(piece) < 5
  assert [new.IdToPiece(V + i) for i in range(N)] == extended["pieces"]
  # General text: the same ids on every line no new piece applies to.
  with open(english_corpus, encoding="utf-8") as f:
    lines = [s for s in f.read().splitlines() if s.strip()][:2000]
  same = touched = 0
  for line in lines:
    before = extended["old_tok"].encode(line)
    after = extended["new_tok"].encode(line)
    if max(after) >= V:
      touched += 1
    else:
      assert after == before, line
      same += 1
  assert same > 0.9 * len(lines), (same, touched)


def test_domain_words_use_the_new_pieces(extended):
  """Each new whole-word piece is how its word is tokenized now, where the
  old vocabulary needed several pieces (or <unk>)."""
  words = [p for p in extended["pieces"]
           if p.startswith(spt.SPIECE_UNDERLINE) and len(p) > 2]
  assert len(words) >= 20, words
  for piece in words:
    word = piece[1:]
    new_id = extended["new_tok"].sp_model.PieceToId(piece)
    assert new_id >= V
    assert extended["new_tok"].encode(word) == [new_id], piece
    assert len(extended["old_tok"].encode(word)) > 1, piece


def test_held_out_domain_text_needs_fewer_pieces_and_saving_beats_order(
    extended):
  """Pieces per word on held-out clinical text: at least 25% fewer, and
  the `saving` ranking does better than the domain model's own order with
  the same number of pieces."""
  held_out = domain_text.clinical_sentences(100, held_out=True)
  assert not set(held_out) & set(domain_text.clinical_sentences(300))
  params = vext.VocabularyExtensionParams.from_flat(
      init_checkpoint="unused", albert_config_file=extended["config_file"],
      spm_model_file=extended["spm"], input_file=extended["domain"],
      new_pieces=N, output_dir="unused")
  vocabulary = vext.read_vocabulary(
      params, AlbertConfig.from_json_file(extended["config_file"]))
  sentences = vext.read_domain(params)
  measured = {"old": vext.pieces_per_word(extended["old_tok"], held_out)}
  for ranking in vx.RANKINGS:
    chosen = vext.choose_pieces(params, vocabulary, sentences, ranking)
    _, tokenizer = vext.extended_tokenizer(vocabulary, chosen)
    measured[ranking] = vext.pieces_per_word(tokenizer, held_out)
  print("held-out pieces per word:", json.dumps(measured))
  ppw = {k: v["pieces_per_word"] for k, v in measured.items()}
  assert ppw["saving"] <= 0.75 * ppw["old"], ppw
  assert ppw["saving"] < ppw["model_order"], ppw
  assert (measured["saving"]["unknown_chars_per_word"] <
          measured["old"]["unknown_chars_per_word"]), measured


def test_new_rows_are_the_means_of_their_spelling(extended):
  old, new, report = extended["old"], extended["new"], extended["report"]
  assert set(old) == set(new)
  for name in old:
    if name not in (vext.EMBEDDINGS, vext.OUTPUT_BIAS):
      np.testing.assert_array_equal(new[name], old[name], err_msg=name)
  unknown_only = 0
  space = extended["old_tok"].sp_model.PieceToId(spt.SPIECE_UNDERLINE)
  for name in (vext.EMBEDDINGS, vext.OUTPUT_BIAS):
    assert new[name].shape[0] == V + N
    np.testing.assert_array_equal(new[name][:V], old[name])
    for i, piece in enumerate(report["pieces"]):
      spelling = piece["spelling"]
      if piece["piece"].startswith(spt.SPIECE_UNDERLINE):  # a whole word
        assert spelling == extended["old_tok"].sp_model.EncodeAsIds(
            piece["piece"][1:]), piece
      if set(spelling) <= {1, space}:  # <unk> (and "▁"): a new script
        expected = old[name].mean(axis=0)
        unknown_only += 1
      else:
        expected = old[name][spelling].mean(axis=0)
      np.testing.assert_allclose(new[name][V + i], expected, atol=1e-6,
                                 err_msg=piece["piece"])
  assert unknown_only >= 2 * 5, unknown_only  # Chinese characters, 2 tables


def test_bad_input_is_one_line_and_writes_nothing(runs):
  root = runs["root"]
  expected = {
      "zero": "error: --new_pieces=0 must be positive",
      "too_many": "error: --new_pieces=3000 is more than the domain corpus in "
                  f"--input_file={runs['domain']} supplies (",
      "mismatch": f"error: --spm_model_file={runs['spm']} has {V} pieces but "
                  f"--albert_config_file={root / 'wrong.json'} has "
                  f"vocab_size={V + 1}: the tokenizer does not belong to the "
                  "model",
      "empty": f"error: --input_file={root / 'empty.txt'}: the corpus has no "
               "text",
      "exists": f"error: --output_dir={root / 'taken'} exists; give a new "
                "folder (nothing was written)",
  }
  for name, start in expected.items():
    result = runs["done"][name]
    assert result.returncode == 1, (name, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(start), (name, lines[-3:])
    assert "Traceback" not in result.stderr, name
  names = sorted(os.listdir(root))
  assert not [n for n in names if n.startswith(".")], names
  for name in ("zero", "too_many", "mismatch", "empty_out"):
    assert name not in names
  assert os.listdir(root / "taken") == []


def test_extended_model_pretrains_and_exports_its_vocabulary(extended,
                                                             tmp_path):
  """Data made with the new tokenizer, two run_pretraining steps from the
  folder as --init_checkpoint (the grown tables load: shapes are strict),
  and a Hugging Face export whose tokenizer gives our ids."""
  from albert_tf.training.pretraining import driver
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  out = extended["out"]
  spm = os.path.join(out, os.path.basename(extended["spm"]))
  records = str(tmp_path / "domain.tfrecord")
  pretraining_writer.create_pretraining_data(
      extended["domain"], records, spm,
      instance_options.InstanceOptions(max_seq_length=32,
                                       max_predictions_per_seq=5),
      dupe_factor=1, random_seed=7, num_workers=1, show_progress=False)
  ids = set()
  for record in tf.data.TFRecordDataset(records):
    example = tf.train.Example.FromString(record.numpy())
    ids.update(example.features.feature["input_ids"].int64_list.value)
  assert max(ids) >= V  # the new pieces are in the data
  params = driver.PretrainingParams.from_flat(
      input_file=records, output_dir=str(tmp_path / "run"),
      albert_config_file=os.path.join(out, "albert_config.json"),
      init_checkpoint=out, train_batch_size=8, max_seq_length=32,
      max_predictions_per_seq=5, num_train_steps=2, num_warmup_steps=1,
      save_checkpoints_steps=2, iterations_per_loop=2, seed=3,
      shuffle_buffer_size=10)
  driver.run_pretraining(params)
  trained = converter.read_weights(str(tmp_path / "run"),
                                   extended["config"]).arrays
  # Started from the extended weights (two small LAMB steps away).
  np.testing.assert_allclose(trained[vext.EMBEDDINGS],
                             extended["new"][vext.EMBEDDINGS], atol=1e-2)

  hf = str(tmp_path / "hf")
  converter.convert_checkpoint(extended["config"], out, hf, "huggingface",
                               spm_model_file=spm)
  with open(os.path.join(hf, "spiece.model"), "rb") as f, open(spm,
                                                               "rb") as g:
    assert f.read() == g.read()
  from transformers import AutoTokenizer
  hf_tokenizer = AutoTokenizer.from_pretrained(hf)
  for line in domain_text.clinical_sentences(30, held_out=True):
    if line.isascii():
      ours = extended["new_tok"].encode(line)
      assert hf_tokenizer(line, add_special_tokens=False)[
          "input_ids"] == ours, line
      assert max(ours) >= V, line


def test_wordpiece_model_on_a_ram_filesystem(english_corpus):
  """vocab.txt + checkpoint on ram://: the new lines appended (the 30
  characters the old vocabulary reads as [UNK] first, each a word-start
  piece, then ranked pieces with "##" continuations), rows as stated, the
  output written whole, [UNK] before and after in the summary line."""
  from albert_common import file_io
  from data_pipeline.tokenization import wordpiece_trainer
  root = "ram://extend_wordpiece"
  vocab = f"{root}/vocab.txt"
  wordpiece_trainer.train_wordpiece(english_corpus, vocab, vocab_size=600)
  tokens = wpt.load_vocab(vocab)
  config = AlbertConfig(vocab_size=len(tokens), embedding_size=8,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=32)
  encoder = AlbertEncoder(config)
  rng = np.random.default_rng(1)
  for v in encoder.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  prefix = tf.train.Checkpoint(encoder=encoder).write(f"{root}/enc/ckpt")
  config.to_json_file(f"{root}/albert_config.json")
  file_io.write_atomic(f"{root}/domain.txt", "\n".join(
      domain_text.clinical_sentences(300)) + "\n")
  report = vext.extend_vocabulary(vext.VocabularyExtensionParams.from_flat(
      init_checkpoint=prefix, albert_config_file=f"{root}/albert_config.json",
      vocab_file=vocab, input_file=f"{root}/domain.txt", new_pieces=50,
      domain_vocab_size=152, output_dir=f"{root}/out"))
  assert sorted(file_io.listdir(f"{root}/out")) == [
      "albert_config.json", "checkpoint", "data_settings.json",
      "model.ckpt.data-00000-of-00001", "model.ckpt.index", "vocab.txt",
      vext.REPORT_NAME]
  new_tokens = wpt.load_vocab(f"{root}/out/vocab.txt")
  added = [p["piece"] for p in report["pieces"]]
  assert new_tokens == tokens + added
  old_tokenizer = wpt.WordPieceTokenizer(None, tokens=tokens)
  unknown = {c for s in domain_text.clinical_sentences(300) for c in s
             if old_tokenizer.encode(c) == [old_tokenizer.unk_id]}
  assert len(unknown) == 30 and set(added[:30]) == unknown, added[:30]
  assert report["characters_added"] == 30
  assert any(p.startswith("##") for p in added[30:]), added[30:]
  before, after = (report[k]["unk_share"]
                   for k in ("domain_before", "domain_after"))
  assert after == 0 < before, (before, after)
  assert vext.summary_line("out", report).endswith(
      f", [UNK] share of pieces {before:.1%} -> 0.0% (30 characters added "
      "as pieces)")
  after = report["domain_after"]["pieces_per_word"]
  assert after <= 0.75 * report["domain_before"]["pieces_per_word"], report
  old = encoder.get_embedding_table().numpy()
  grown = converter.read_weights(
      f"{root}/out", dataclasses.replace(config, vocab_size=len(new_tokens))
  ).arrays[vext.EMBEDDINGS]
  np.testing.assert_array_equal(grown[:len(tokens)], old)
  unk = tokens.index("[UNK]")
  for i, piece in enumerate(report["pieces"]):
    spelling = piece["spelling"]
    expected = (old.mean(axis=0) if spelling == [unk]
                else old[spelling].mean(axis=0))
    np.testing.assert_allclose(grown[len(tokens) + i], expected, atol=1e-6)


def test_a_run_continued_from_the_folder_warns_on_other_settings(
    extended, tmp_path, caplog, pretraining_records):
  """The folder's data_settings.json is what a continued run compares its
  records with: records written without lowercasing (their stats JSON says
  so) are one warning naming it; records like the source's, none."""
  from albert_tf.training.pretraining import continuation
  from albert_tf.training.pretraining import driver
  with open(pretraining_records["path"] + ".stats.json") as f:
    stats = json.load(f)
  assert stats["settings"]["do_lower_case"] is True
  stats["settings"]["do_lower_case"] = False
  cased = str(tmp_path / "cased.tfrecord")
  tf.io.gfile.copy(pretraining_records["path"], cased)
  with open(cased + ".stats.json", "w") as f:
    json.dump(stats, f)
  caplog.set_level(logging.INFO, logger="absl")
  for records, expected in ((pretraining_records["path"], []),
                            (cased, ["do_lower_case True -> False"])):
    caplog.clear()
    continuation.read_source(driver.PretrainingParams.from_flat(
        input_file=records, output_dir=str(tmp_path / "run"),
        init_checkpoint=extended["out"], max_seq_length=32,
        max_predictions_per_seq=5, num_train_steps=10), extended["config"])
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING]
    assert len(warnings) == len(expected), warnings
    for text in expected:
      assert f": {text}. " in warnings[0], warnings
