"""Trains an ALBERT SentencePiece model with the official recipe.

The official command (google-research/albert README) is a unigram model of
30000 pieces, `<pad>`=0, `<unk>`=1, control symbols `[CLS]`=2, `[SEP]`=3,
`[MASK]`=4, user-defined symbols `( ) " - . – £ €` and character coverage
0.99995, as in the released `30k-clean.model`.

One difference: text is normalised with `tokenization.preprocess_text` before
training and the model is trained with the `identity` normalization rule, so
SentencePiece itself never normalises. The Python and in-graph tokenizers apply
the same `preprocess_text` and therefore see exactly the text the model was
trained on.

Input is read in one streaming pass; at most `input_sentence_size` non-blank
lines are kept by reservoir sampling (deterministic for a `random_seed`), so
corpora larger than memory work. Lines that are not valid UTF-8 are skipped and
counted (a warning gives the count per file) rather than failing the run: one
bad line in a multi-GB crawl should not cost the whole job.

Input and output paths may be on any TensorFlow filesystem (`gs://`). The
SentencePiece trainer writes local files only, so it trains in a private
local temporary directory (removed afterwards); the model and vocabulary are
then published at `model_prefix` under temporary names and renamed.
"""

import dataclasses
import os
import random
import tempfile
from typing import Dict, Iterator, List, Sequence, Tuple, Union

from absl import logging
import sentencepiece as spm

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

ALBERT_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
ALBERT_USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3",
                               "\u20ac")
MODEL_TYPES = ("unigram", "bpe", "char", "word")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentencePieceTrainingParams(FlatConstructible):
  """Settings of tools.train_sentencepiece (each field is its flag)."""

  input: Tuple[str, ...] = setting(
      help="Text files, one sentence per line: globs and/or a "
      "comma-separated list.")
  model_prefix: str = setting(help="Output path without extension.")
  vocab_size: int = setting(30000, "Number of pieces.")
  model_type: str = setting("unigram", "SentencePiece model type.",
                            choices=MODEL_TYPES)
  character_coverage: float = setting(
      0.99995, "Fraction of characters the vocabulary covers.")
  do_lower_case: bool = setting(True, "Lowercase the text.")
  keep_accents: bool = setting(False,
                               "Keep accents instead of stripping.")
  input_sentence_size: int = setting(
      10_000_000, "Train on at most this many lines, reservoir-sampled in "
      "one pass (<= 0: all lines).")
  random_seed: int = setting(12345, "Seed of the sampling.")
  num_threads: int = setting(16, "Training threads.")
  user_defined_symbols: Tuple[str, ...] = setting(
      ALBERT_USER_DEFINED_SYMBOLS,
      "Pieces always split out of the text (official ALBERT set).")


def resolve_inputs(input_patterns: Union[str, Sequence[str]]) -> List[str]:
  """Expands globs / comma lists into sorted files; UserInputError if none."""
  return file_io.glob_files(input_patterns, "no input file given (--input)",
                            "input file not found: {pattern}")


def _read_lines(path: str, stats: Dict[str, int]) -> Iterator[str]:
  """Non-blank lines of `path`; non-UTF-8 lines are counted and skipped."""
  bad = 0
  try:
    with file_io.open_read(path) as f:
      for raw in f:
        try:
          line = raw.decode("utf-8")
        except UnicodeDecodeError:
          bad += 1
          continue
        if line.strip():
          stats["lines"] += 1
          yield line
  except OSError as e:
    raise UserInputError(f"cannot read input file {path}: {e}") from e
  if bad:
    logging.warning("%s: skipped %d line(s) that are not valid UTF-8",
                    path, bad)
    stats["skipped_non_utf8"] += bad


def sample_lines(files: Sequence[str], input_sentence_size: int,
                 random_seed: int, stats: Dict[str, int]) -> List[str]:
  """Reservoir-samples at most `input_sentence_size` lines (<= 0: all).

  The kept lines are in input order, so the sample does not depend on how
  files are split, only on the seed and the sequence of lines.
  """
  rng = random.Random(random_seed)
  reservoir = []  # (line index, line)
  for path in files:
    for line in _read_lines(path, stats):
      n = stats["lines"]  # 1-based index of this line.
      if input_sentence_size <= 0 or len(reservoir) < input_sentence_size:
        reservoir.append((n, line))
      else:
        j = rng.randrange(n)
        if j < input_sentence_size:
          reservoir[j] = (n, line)
  reservoir.sort()
  return [line for _, line in reservoir]


def train_sentencepiece(input_patterns: Union[str, Sequence[str]],
                        model_prefix: str,
                        vocab_size: int = 30000,
                        model_type: str = "unigram",
                        character_coverage: float = 0.99995,
                        do_lower_case: bool = True,
                        keep_accents: bool = False,
                        input_sentence_size: int = 10_000_000,
                        random_seed: int = 12345,
                        num_threads: int = 16,
                        control_symbols: Sequence[str] = ALBERT_CONTROL_SYMBOLS,
                        user_defined_symbols: Sequence[str] = (
                            ALBERT_USER_DEFINED_SYMBOLS),
                        ) -> Dict[str, int]:
  """Trains `<model_prefix>.model` and `<model_prefix>.vocab`.

  Args:
    input_patterns: str or list of str; globs or comma-separated lists of
      text files, one sentence per line (blank lines are ignored).
    model_prefix: output path without extension; both files are written under
      a temporary name and renamed, so no partial model is left behind.
    vocab_size: number of pieces, including the 5 ALBERT special pieces.
    model_type: "unigram" (ALBERT), "bpe", "char" or "word".
    character_coverage: fraction of characters covered by the vocabulary.
    do_lower_case: lowercase the text (released ALBERT models: True).
    keep_accents: keep accents instead of stripping them.
    input_sentence_size: train on at most this many lines, reservoir-sampled;
      <= 0 uses every line.
    random_seed: seed of the sampling (and of SentencePiece).
    num_threads: SentencePiece training threads.
    control_symbols: pieces placed right after <pad>, <unk>, never produced
      by encoding text.
    user_defined_symbols: pieces always split out of the text.

  Returns:
    dict with "lines" (non-blank valid lines read), "sampled",
    "skipped_non_utf8" and "vocab_size".

  Raises:
    UserInputError: missing input, empty corpus, or a vocabulary larger than
      the corpus supports.
  """
  files = resolve_inputs(input_patterns)
  stats = {"lines": 0, "skipped_non_utf8": 0}
  sentences = _training_sentences(files, input_sentence_size, random_seed,
                                  do_lower_case, keep_accents, stats)
  stats["sampled"] = len(sentences)
  try:
    file_io.makedirs(file_io.dirname(model_prefix))
  except OSError as e:  # Local paths; TF filesystems fail at the write.
    raise UserInputError(f"--model_prefix={model_prefix}: cannot create its "
                         f"directory: {e}") from None
  # The trainer writes local files only: a private scratch folder.
  with tempfile.TemporaryDirectory(prefix="albert_spm_",
                                   ignore_cleanup_errors=True) as tmp_dir:
    tmp_prefix = os.path.join(tmp_dir, "spm")
    _train(sentences, tmp_prefix, files, random_seed, vocab_size=vocab_size,
           model_type=model_type, character_coverage=character_coverage,
           control_symbols=list(control_symbols),
           user_defined_symbols=list(user_defined_symbols),
           num_threads=num_threads)
    for ext in (".vocab", ".model"):  # The model last: it marks completion.
      with open(tmp_prefix + ext, "rb") as f:
        file_io.write_atomic(model_prefix + ext, f.read())
  stats["vocab_size"] = vocab_size
  logging.info("wrote %s.model (%d pieces) from %d of %d lines",
               model_prefix, vocab_size, stats["sampled"], stats["lines"])
  return stats


def _training_sentences(files: Sequence[str], input_sentence_size: int,
                        random_seed: int, do_lower_case: bool,
                        keep_accents: bool, stats: Dict[str, int]
                        ) -> List[str]:
  """The sampled lines, normalised (`preprocess_text`), blank ones dropped.

  Raises:
    UserInputError: no text line in `files` (an empty corpus).
  """
  lines = sample_lines(files, input_sentence_size, random_seed, stats)
  sentences = [s for s in (tokenization.preprocess_text(
      line, keep_accents=keep_accents, lower=do_lower_case) for line in lines)
               if s]
  if not sentences:
    raise UserInputError(
        f"empty corpus: no text lines in {', '.join(files)}")
  return sentences


def _train(sentences: List[str], model_prefix: str, files: Sequence[str],
           random_seed: int, **options) -> None:
  """Runs the SentencePiece trainer: `<model_prefix>.model` and `.vocab`.

  Args:
    sentences: the normalised training text.
    model_prefix: a local path prefix.
    files: the input files (named in errors).
    random_seed: SentencePiece's seed.
    **options: the trainer's vocab_size, model_type, character_coverage,
      control_symbols, user_defined_symbols and num_threads.

  Raises:
    UserInputError: naming `files`, where the trainer refuses the corpus
      (e.g. a vocab_size larger than it supports).
  """
  spm.set_random_generator_seed(random_seed)
  try:
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=model_prefix,
        normalization_rule_name="identity",  # Text is normalised already.
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        input_sentence_size=0,  # Sampling is done already.
        minloglevel=1,
        **options)
  except RuntimeError as e:
    if "Vocabulary size too high" in str(e):
      limit = str(e).rsplit("<=", 1)[-1].strip(" .")
      raise UserInputError(
          f"--vocab_size={options['vocab_size']} is too large for the "
          f"corpus in {', '.join(files)} (SentencePiece allows at most "
          f"{limit}); use a smaller --vocab_size or more text") from e
    raise UserInputError(
        f"SentencePiece training failed on {', '.join(files)}: {e}") from e
