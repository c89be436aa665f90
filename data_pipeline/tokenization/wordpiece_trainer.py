"""Learns a WordPiece vocabulary (`vocab.txt`) from a corpus.

Words are counted after BERT's own text handling, Hugging Face `tokenizers`'
`BertNormalizer` (control characters dropped, whitespace normalised, each CJK
character a word of its own, lowercase and accent stripping with
`do_lower_case`) and `BertPreTokenizer` (split on whitespace and
punctuation): the official `FullTokenizer`'s BasicTokenizer, so the learned
pieces are the ones WordPiece tokenization will look up. The vocabulary is
learned from the counts by tensorflow-text's WordPiece learner (the one behind
`bert_vocab_from_dataset`), which is deterministic: the same corpus and seed
give the same file. (`tokenizers`' own WordPiece trainer breaks ties in hash
order, a different vocabulary each run.)

The vocabulary starts with `[PAD] [UNK] [CLS] [SEP] [MASK]` (ids 0-4), then
the characters and their "##" continuations, then the learned pieces.
Lines are read in one streaming pass and at most `input_sentence_size` of
them are kept by reservoir sampling, as for SentencePiece, so corpora larger
than memory work; every path may be on any TensorFlow filesystem.
"""

import collections
import dataclasses
from typing import Dict, List, Sequence, Tuple, Union

from absl import logging
import tokenizers
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.tokenization import sentencepiece_trainer

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WordPieceTrainingParams(FlatConstructible):
  """Settings of tools.train_wordpiece (each field is its flag)."""

  input: Tuple[str, ...] = setting(
      help="Text files: globs and/or a comma-separated list (blank lines are "
      "ignored).")
  vocab_file: str = setting(help="The vocab.txt to write.")
  vocab_size: int = setting(
      30000, "At most this many pieces, the special tokens included.")
  do_lower_case: bool = setting(
      True, "Lowercase and strip accents before counting words.")
  input_sentence_size: int = setting(
      10_000_000, "Learn from at most this many lines, reservoir-sampled in "
      "one pass (<= 0: all lines).")
  random_seed: int = setting(12345, "Seed of the sampling.")
  max_unique_chars: int = setting(
      1000, "Keep at most this many distinct characters (the most "
      "frequent); rarer ones tokenize as [UNK].")


def bert_pre_tokenizer(do_lower_case: bool) -> tokenizers.Tokenizer:
  """An untrained WordPiece `tokenizers.Tokenizer` with BERT's BasicTokenizer
  steps (normaliser and pre-tokenizer) and BERT's 200-character word limit."""
  tokenizer = tokenizers.Tokenizer(models.WordPiece(
      unk_token="[UNK]", continuing_subword_prefix="##",
      max_input_chars_per_word=200))
  tokenizer.normalizer = normalizers.BertNormalizer(
      clean_text=True, handle_chinese_chars=True,
      strip_accents=do_lower_case, lowercase=do_lower_case)
  tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  return tokenizer


def train_wordpiece(input_patterns: Union[str, Sequence[str]],
                    vocab_file: str,
                    vocab_size: int = 30000,
                    do_lower_case: bool = True,
                    input_sentence_size: int = 10_000_000,
                    random_seed: int = 12345,
                    max_unique_chars: int = 1000) -> Dict[str, int]:
  """Learns a WordPiece vocabulary and writes it to `vocab_file`.

  Args:
    input_patterns: str or list of str; globs or comma-separated lists of
      text files (blank lines are ignored; one sentence per line or not).
    vocab_file: the `vocab.txt` to write, one piece per line in id order;
      written under a temporary name and renamed.
    vocab_size: at most this many pieces, the 5 special tokens included.
    do_lower_case: lowercase and strip accents (BERT's uncased and Chinese
      models: True). Tokenize with the same setting.
    input_sentence_size: learn from at most this many lines,
      reservoir-sampled; <= 0 uses every line.
    random_seed: seed of the sampling.
    max_unique_chars: keep at most this many distinct characters (the most
      frequent); words with rarer ones are not learned from, and such
      characters tokenize as [UNK].

  Returns:
    dict with "lines" (non-blank valid lines read), "sampled",
    "skipped_non_utf8" and "vocab_size" (pieces written: at most
    `vocab_size`; the learner searches a piece-count threshold that gives
    95-100% of it, and a small corpus may end a little below).

  Raises:
    UserInputError: missing input, an empty corpus, a `vocab_size` too small
      for the special tokens and the alphabet, or an unwritable output.
  """
  if vocab_size <= len(SPECIAL_TOKENS):
    raise UserInputError(f"--vocab_size={vocab_size} must be larger than the "
                         f"{len(SPECIAL_TOKENS)} special tokens")
  files = sentencepiece_trainer.resolve_inputs(input_patterns)
  stats = {"lines": 0, "skipped_non_utf8": 0}
  lines = sentencepiece_trainer.sample_lines(files, input_sentence_size,
                                             random_seed, stats)
  if not lines:
    raise UserInputError(f"empty corpus: no text lines in {', '.join(files)}")
  stats["sampled"] = len(lines)
  pieces = learn_vocabulary(lines, vocab_size, do_lower_case, max_unique_chars)
  if len(pieces) > vocab_size:
    raise UserInputError(
        f"--vocab_size={vocab_size} is smaller than the special tokens and "
        f"the characters of the corpus in {', '.join(files)} with their "
        f"'##' forms ({len(pieces)} pieces); use a larger --vocab_size or a "
        "smaller --max_unique_chars")
  try:
    file_io.makedirs(file_io.dirname(vocab_file))
    file_io.write_atomic(vocab_file, "".join(p + "\n" for p in pieces)
                         .encode("utf-8"))
  except OSError as e:
    raise UserInputError(f"--vocab_file={vocab_file}: cannot write it: "
                         f"{e}") from None
  stats["vocab_size"] = len(pieces)
  logging.info("wrote %s (%d pieces) from %d of %d lines", vocab_file,
               len(pieces), stats["sampled"], stats["lines"])
  return stats


def learn_vocabulary(lines: List[str], vocab_size: int, do_lower_case: bool,
                     max_unique_chars: int) -> List[str]:
  """The pieces learned from raw text `lines`, in id order, the special
  tokens first (about `vocab_size` of them; see `train_wordpiece`)."""
  # Imported here: tensorflow_text loads TensorFlow (~5 s), which the input
  # checks above do not need.
  from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
  )
  tokenizer = bert_pre_tokenizer(do_lower_case)
  counts = collections.Counter()
  for line in lines:
    text = tokenizer.normalizer.normalize_str(line)
    counts.update(word for word, _ in
                  tokenizer.pre_tokenizer.pre_tokenize_str(text))
  # Sorted, so the learner's ties do not depend on the order lines came in.
  # lower_thresh=1: a small corpus may need pieces seen only a few times.
  vocab = learner.learn(sorted(counts.items()), vocab_size,
                        list(SPECIAL_TOKENS), lower_thresh=1,
                        max_unique_chars=max_unique_chars)
  return _fit(vocab, vocab_size)


def _fit(vocab: List[str], vocab_size: int) -> List[str]:
  """`vocab` cut to `vocab_size` pieces where the learner's threshold
  search overshot: the rarest multi-character pieces go (the learner lists
  pieces by falling count after the special tokens and characters); the
  characters and their "##" forms stay, so every word still tokenizes."""
  excess = len(vocab) - vocab_size
  kept = []
  for piece in reversed(vocab):
    if (excess > 0 and piece not in SPECIAL_TOKENS and
        len(piece.removeprefix("##")) > 1):
      excess -= 1
    else:
      kept.append(piece)
  return kept[::-1]
