"""Extending an English WordPiece vocab.txt (trained here by
tools.train_wordpiece's learner on stdlib docstrings) to a script it
lacks: every character the old vocabulary cannot spell gets its pieces
first, up to the coverage (0.9995, SentencePiece's default: a vocab.txt
records none), before any longer piece is ranked.

Chinese prose (706 distinct CJK characters, chinese_text.prose_sentences):
a word-start piece per character (BERT's basic tokenizer makes each CJK
ideograph a word, so "##c" is never looked up). Russian prose: a Cyrillic
letter sits inside words, so it gets "c" and "##c"; without them a word
holding it is [UNK] whole.
"""

import collections
import logging

import pytest

from albert_tf.config import AlbertConfig
from albert_tf.training.pretraining import vocabulary_extension as vext
from data_pipeline.tokenization import vocabulary_extension as vx
from data_pipeline.tokenization import wordpiece_tokenizer as wpt
from tests.albert_tf.training.pretraining import chinese_text

# Hand-written Russian sentences (everyday prose): 31 lowercase Cyrillic
# letters after BERT's lowercasing and accent stripping (й -> и, ё -> е).
RUSSIAN = [
    "утром мы пошли на рынок за свежими овощами и фруктами.",
    "бабушка испекла пирог с капустой, и вся семья собралась за столом.",
    "осенью листья в парке становятся жёлтыми и красными.",
    "поезд опоздал на два часа из-за сильного снегопада.",
    "врач посоветовал ему больше гулять и пить тёплый чай с мёдом.",
    "в субботу наша команда выиграла футбольный матч со счётом три-один.",
    "она с детства играет на скрипке и мечтает выступать в большом зале.",
    "летом дети купаются в реке и ловят рыбу с дедушкой.",
    "библиотека закрыта на ремонт до конца месяца.",
    "вечером над озером поднялся густой туман, и стало прохладно.",
    "щенок спрятался под диваном и не хотел выходить.",
    "эту старую церковь построили ещё в шестнадцатом веке.",
    "юный художник нарисовал портрет своей сестры акварелью.",
    "съешь ещё этих мягких французских булок да выпей же чаю.",
]


@pytest.fixture(scope="module")
def english(tmp_path_factory, english_corpus):
  """An English vocab.txt of 1,000 pieces learned by train_wordpiece from
  1,500 lines of the stdlib docstrings, and the corpus' lines."""
  from data_pipeline.tokenization import wordpiece_trainer
  path = str(tmp_path_factory.mktemp("wordpiece") / "vocab.txt")
  wordpiece_trainer.train_wordpiece(english_corpus, path, vocab_size=1000,
                                    input_sentence_size=1500)
  with open(english_corpus, encoding="utf-8") as f:
    lines = [s for s in f.read().splitlines() if s.strip()]
  return path, lines


def _extend(vocab_file, lines, new_pieces):
  """(old tokenizer, extended tokenizer, chosen candidates) as
  tools.extend_vocabulary selects and writes them."""
  params = vext.VocabularyExtensionParams.from_flat(
      init_checkpoint="unused", albert_config_file="unused",
      vocab_file=vocab_file, input_file="unused", new_pieces=new_pieces,
      output_dir="unused")
  size = len(wpt.load_vocab(vocab_file))
  vocabulary = vext.read_vocabulary(params, AlbertConfig(vocab_size=size))
  chosen = vext.choose_pieces(params, vocabulary, lines, params.ranking)
  data, tokenizer = vext.extended_tokenizer(vocabulary, chosen)
  assert data.decode("utf-8").splitlines() == tokenizer.tokens
  return vocabulary.tokenizer, tokenizer, chosen


def _unknown_characters(tokenizer, lines, coverage=0.9995):
  """(character, count) of `lines`' words, most frequent first, that the
  tokenizer reads as [UNK] alone or after a letter ("a" + c: one word
  unless the basic tokenizer cuts c off), among those SentencePiece's
  trainer keeps (while the share covered is below `coverage`): the rule
  written out apart from the code under test."""
  counts = collections.Counter(
      c for line in lines for w in wpt.basic_tokenize(line, True) for c in w)
  total, covered, kept = sum(counts.values()), 0, []
  for char, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    if covered / total >= coverage:
      break
    covered += count
    if tokenizer.unk_id in (tokenizer.encode(char) +
                            tokenizer.encode("a" + char)):
      kept.append((char, count))
  return kept


def _unk_share(tokenizer, lines):
  counts = vx.count_pieces(tokenizer, lines)
  return counts["unknown_pieces"] / counts["pieces"]


def test_chinese_prose_gets_a_piece_for_every_character(english):
  """[UNK] is every piece before and none after but the rarest characters
  beyond the coverage; every character the old vocabulary cannot spell
  is a word-start piece, most frequent first; old ids keep their pieces
  and English text tokenizes exactly as before."""
  vocab_file, english_lines = english
  lines = chinese_text.prose_sentences(600)
  old = wpt.WordPieceTokenizer(vocab_file)
  unknown = _unknown_characters(old, lines)
  cjk = {c for c, _ in unknown if wpt.is_cjk(c)}
  assert len(cjk) > 600, len(cjk)
  old_tok, new_tok, chosen = _extend(vocab_file, lines, len(unknown))
  before, after = _unk_share(old_tok, lines), _unk_share(new_tok, lines)
  print(f"[UNK] share: {before:.2%} -> {after:.4%} ({len(unknown)} "
        "characters)")
  assert before > 0.2 and after < 0.001, (before, after)

  assert [c.piece for c in chosen] == [c for c, _ in unknown]
  assert all(c.model_rank < 0 and c.spelling == (old.unk_id,)
             for c in chosen)
  assert not any(p.startswith(wpt.CONTINUATION) for p in
                 new_tok.tokens[old.vocab_size:])
  for char, _ in unknown:
    assert new_tok.encode_word(char) == [new_tok.vocab[char]], char
  assert new_tok.tokens[:old.vocab_size] == old.tokens
  added = {c for c, _ in unknown}
  plain = [s for s in english_lines if not added & set(s)]
  changed = [s for s in plain if new_tok.encode(s) != old.encode(s)]
  assert len(plain) > 3000 and not changed, changed[:3]


def test_russian_letters_get_both_pieces_before_whole_words(english):
  """Each Cyrillic letter gets "c" and "##c" ahead of the whole words the
  `saving` ranking prefers, so no Russian word is [UNK] after (every one
  is before); the remaining budget still goes to longer pieces."""
  vocab_file, _ = english
  lines = RUSSIAN * 3
  old = wpt.WordPieceTokenizer(vocab_file)
  unknown = _unknown_characters(old, lines)
  letters = [c for c, _ in unknown if c.isalpha()]
  assert len(letters) == 31 and all("а" <= c <= "я" for c in letters)
  budget = 2 * len(letters) + 20
  old_tok, new_tok, chosen = _extend(vocab_file, lines, budget)
  words = [w for line in lines for w in wpt.basic_tokenize(line, True)
           if w.isalpha()]
  assert all(old_tok.encode_word(w) == [old.unk_id] for w in words)
  assert not [w for w in words
              if new_tok.encode_word(w) == [new_tok.unk_id]]
  assert _unk_share(old_tok, lines) > 0.2 and _unk_share(new_tok,
                                                         lines) == 0
  pieces = [c.piece for c in chosen]
  for letter in letters:
    assert {letter, "##" + letter} <= set(pieces), letter
  first = [c for c in chosen if c.model_rank < 0]
  assert pieces[:len(first)] == [c.piece for c in first]
  assert len(first) == 2 * len(letters) + sum(
      1 for c, _ in unknown if not c.isalpha())
  assert len(chosen) == budget and all(
      len(p.removeprefix("##")) > 1 for p in pieces[len(first):])


# English terms as Chinese technical prose writes them: whole words that
# save more pieces each than a rare character does.
TERMS = ["dataloader", "hyperparameter", "quantization", "tensorboard",
         "backpropagation", "checkpointing", "pretraining", "finetuning"]


@pytest.mark.parametrize("extra", [0, 4])
def test_characters_come_before_words_that_save_more(english, extra):
  """Chinese prose with English terms, a budget of the characters +
  `extra`: every character is still a piece ([UNK] < 0.1% after), ahead of
  the terms, which each save more pieces than a rare character does; the
  `extra` pieces shorten the terms. (Ranked by pieces saved alone, the
  terms take the rarest characters' places: 0.13% [UNK] at extra=0.)"""
  vocab_file, _ = english
  lines = [f"{line} ({TERMS[i % len(TERMS)]})" if i % 2 else line
           for i, line in enumerate(chinese_text.prose_sentences(600))]
  old = wpt.WordPieceTokenizer(vocab_file)
  unknown = _unknown_characters(old, lines)
  old_tok, new_tok, chosen = _extend(vocab_file, lines, len(unknown) + extra)
  before, after = _unk_share(old_tok, lines), _unk_share(new_tok, lines)
  print(f"[UNK] share: {before:.2%} -> {after:.4%}; added after the "
        f"characters: {[c.piece for c in chosen[len(unknown):]]}")
  assert before > 0.2 and after < 0.001, (before, after)
  assert [c.piece for c in chosen[:len(unknown)]] == [c for c, _ in unknown]
  terms_before = sum(len(old_tok.encode_word(t)) for t in TERMS)
  terms_after = sum(len(new_tok.encode_word(t)) for t in TERMS)
  assert terms_before - terms_after >= extra, (terms_before, terms_after)
  assert (terms_after < terms_before) == (extra > 0)


def test_a_budget_below_the_characters_keeps_whole_characters(english,
                                                              caplog):
  """--new_pieces=21 on the Russian prose: the 10 most frequent letters,
  each with both pieces, then one ranked piece; one warning says so."""
  vocab_file, _ = english
  lines = RUSSIAN * 3
  letters = [c for c, _ in _unknown_characters(
      wpt.WordPieceTokenizer(vocab_file), lines)][:10]
  caplog.set_level(logging.WARNING, logger="absl")
  _, _, chosen = _extend(vocab_file, lines, 21)
  assert [c.piece for c in chosen[:20]] == [
      p for c in letters for p in (c, "##" + c)]
  assert chosen[20].model_rank >= 0
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
  assert len(warnings) == 1 and warnings[0].endswith(
      "--new_pieces=21 adds only the most frequent 10 of them (20 pieces)"
      ), warnings
