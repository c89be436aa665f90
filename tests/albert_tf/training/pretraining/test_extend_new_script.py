"""Extending an English SentencePiece model (trained here with
SentencePiece's defaults) to Chinese technical prose: every character the
old model reads as <unk> becomes a piece first, up to its
character_coverage, as SentencePiece's own trainer keeps them; and the
extended model's trainer_spec says how the new pieces were learned."""

import collections
import io

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf.config import AlbertConfig
from albert_tf.training.pretraining import vocabulary_extension as vext
from data_pipeline.tokenization import vocabulary_extension as vx
from tests.albert_tf.training.pretraining import chinese_text

# Three characters once each: below SentencePiece's default coverage
# (0.9995) of the ~10,000 characters of the text, so no trainer keeps them.
RARE = "鑫淼犇"
NEW_PIECES = 260


def _train(lines, vocab_size, **options):
  """The bytes of a SentencePiece model of `lines`, with SentencePiece's
  defaults except `options`."""
  model = io.BytesIO()
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_writer=model,
      vocab_size=vocab_size, minloglevel=2, **options)
  return model.getvalue()


@pytest.fixture(scope="module")
def english(tmp_path_factory, english_corpus):
  """An English unigram model of the stdlib docstrings (defaults: NFKC,
  character_coverage 0.9995), its path and its size."""
  with open(english_corpus, encoding="utf-8") as f:
    lines = [s for s in f.read().splitlines() if s.strip()]
  path = tmp_path_factory.mktemp("english") / "english.model"
  path.write_bytes(_train(lines, 1000))
  return str(path), 1000


@pytest.fixture(scope="module")
def chinese():
  lines = chinese_text.sentences(400)
  return lines[:200] + [f"数据管道{RARE}读取配置文件。"] + lines[200:]


def _vocabulary(path, size, **flags):
  params = vext.VocabularyExtensionParams.from_flat(
      init_checkpoint="unused", albert_config_file="unused",
      spm_model_file=path, input_file="unused", new_pieces=NEW_PIECES,
      output_dir="unused", **flags)
  return params, vext.read_vocabulary(params, AlbertConfig(vocab_size=size))


def test_unknown_characters_become_pieces_up_to_the_coverage(english,
                                                             chinese):
  """<unk> is more than 20% of the pieces before; after, only the three
  characters beyond the coverage are unknown (one <unk>), and the
  characters the extension adds are exactly those SentencePiece's trainer
  keeps for the text that the old model cannot spell."""
  params, vocabulary = _vocabulary(*english)
  chosen = vext.choose_pieces(params, vocabulary, chinese, "saving")
  _, tokenizer = vext.extended_tokenizer(vocabulary, chosen)
  before = vext.pieces_per_word(vocabulary.tokenizer, chinese)
  after = vext.pieces_per_word(tokenizer, chinese)
  print("<unk> share before, after:", before["unk_share"],
        after["unk_share"])
  assert before["unk_share"] > 0.2, before
  pieces = vx.count_pieces(tokenizer, chinese)
  assert pieces["unknown_pieces"] == 1 and pieces["unknown_chars"] == 3
  assert after["unk_share"] == 1 / pieces["pieces"]
  surfaces = [s for line in chinese for s in tokenizer.tokenize(line)]
  unknown = [s for s, i in zip(surfaces, tokenizer.convert_tokens_to_ids(
      surfaces)) if i == tokenizer.unk_id]
  assert unknown == [RARE]

  # SentencePiece's trainer on the same text keeps these characters.
  domain = sentencepiece_model_pb2.ModelProto()
  domain.ParseFromString(_train(chinese, 400, hard_vocab_limit=False))
  kept = {p.piece for p in domain.pieces if len(p.piece) == 1}
  old = spm.SentencePieceProcessor(model_file=english[0])
  cannot_spell = {c for c in kept if old.unk_id() in old.EncodeAsIds(c)}
  characters = [c.piece for c in chosen if c.model_rank < 0]
  assert len(cannot_spell) > 150 and not set(RARE) & kept
  assert set(characters) == cannot_spell
  assert [c.piece for c in chosen[:len(characters)]] == characters
  counts = collections.Counter(c for line in chinese for c in line)
  assert [counts[c] for c in characters] == sorted(
      (counts[c] for c in characters), reverse=True)
  # The rest are ranked pieces, several characters long.
  assert len(chosen) == NEW_PIECES
  assert all(len(c.piece.lstrip("▁")) > 1 for c in chosen[len(characters):])


@pytest.mark.parametrize("split", [True, False])
def test_the_extended_model_says_how_its_pieces_were_learned(
    english, chinese, split):
  """trainer_spec.split_by_unicode_script of the written model is the
  setting the new pieces were learned with (the old model's is True)."""
  params, vocabulary = _vocabulary(*english, split_by_unicode_script=split)
  assert vocabulary.proto.trainer_spec.split_by_unicode_script
  chosen = vext.choose_pieces(params, vocabulary, chinese, "saving")
  data, _ = vext.extended_tokenizer(vocabulary, chosen,
                                    params.split_by_unicode_script)
  written = sentencepiece_model_pb2.ModelProto()
  written.ParseFromString(data)
  assert written.trainer_spec.split_by_unicode_script is split
  assert written.trainer_spec.vocab_size == 1000 + NEW_PIECES
