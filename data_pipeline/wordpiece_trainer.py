"""Learns a WordPiece vocabulary (`vocab.txt`) from a text corpus.

The learner is the `tokenizers` package's `WordPieceTrainer` (Hugging
Face's, in Rust), run behind BERT's normalizer and pre-tokenizer with the
settings of our tokenizer (`wordpiece_tokenization`): text cleaning, one
token per CJK character, lowercasing and accent stripping with
`do_lower_case`, punctuation split. `[PAD] [UNK] [CLS] [SEP] [MASK]` take
ids 0-4; continuation pieces carry "##".

Input is streamed one line at a time from any TensorFlow filesystem (files
as `train_sentencepiece` takes them; non-UTF-8 lines skipped and counted),
so memory holds the word counts, not the corpus. The vocabulary is written
atomically to any filesystem.
"""

from typing import Dict, Sequence, Union

from data_pipeline import file_io
from data_pipeline import sentencepiece_trainer
from data_pipeline.shared import UserInputError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(input_patterns: Union[str, Sequence[str]],
                    vocab_file: str, vocab_size: int = 30000,
                    do_lower_case: bool = True, min_frequency: int = 2,
                    limit_alphabet: int = 1000) -> Dict[str, int]:
  """Writes `vocab_file`: one token a line, the specials first.

  Args:
    input_patterns: globs or comma-separated lists of text files.
    vocab_file: the output path (any filesystem).
    vocab_size: the most tokens the vocabulary holds (specials included).
    do_lower_case: lowercase and strip accents, as the tokenizer will.
    min_frequency: a merge needs at least this many occurrences.
    limit_alphabet: the most initial characters kept (the released Chinese
      vocabulary holds ~21k tokens, most of them single characters: raise
      it for Chinese corpora).

  Returns:
    {"lines", "skipped_non_utf8", "vocab_size"}.

  Raises:
    UserInputError: no input, an unreadable file, a bad setting, no text.
  """
  from tokenizers import Tokenizer
  from tokenizers import models
  from tokenizers import normalizers
  from tokenizers import pre_tokenizers
  from tokenizers import trainers

  from data_pipeline import wordpiece_tokenization as wp
  if vocab_size <= len(SPECIAL_TOKENS):
    raise UserInputError(f"--vocab_size={vocab_size} must be more than the "
                         f"{len(SPECIAL_TOKENS)} special tokens")
  files = sentencepiece_trainer.resolve_inputs(input_patterns)
  stats = {"lines": 0, "skipped_non_utf8": 0}
  tokenizer = Tokenizer(models.WordPiece(
      unk_token=wp.UNK_TOKEN,
      max_input_chars_per_word=wp.MAX_INPUT_CHARS_PER_WORD))
  tokenizer.normalizer = normalizers.BertNormalizer(
      clean_text=True, handle_chinese_chars=True,
      strip_accents=do_lower_case, lowercase=do_lower_case)
  tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  trainer = trainers.WordPieceTrainer(
      vocab_size=vocab_size, min_frequency=min_frequency,
      limit_alphabet=limit_alphabet, special_tokens=list(SPECIAL_TOKENS),
      continuing_subword_prefix=wp.CONTINUATION, show_progress=False)
  lines = (line for path in files
           for line in sentencepiece_trainer._read_lines(path, stats))  # pylint: disable=protected-access
  tokenizer.train_from_iterator(lines, trainer)
  if not stats["lines"]:
    raise UserInputError(f"--input: no text in {', '.join(files)}")
  vocab = tokenizer.get_vocab()
  tokens = sorted(vocab, key=vocab.get)
  try:
    file_io.makedirs(file_io.dirname(vocab_file) or ".")
    file_io.write_atomic(vocab_file, "".join(f"{t}\n" for t in tokens))
  except OSError as e:
    raise UserInputError(f"--vocab_file={vocab_file} cannot be written: "
                         f"{e}") from None
  stats["vocab_size"] = len(tokens)
  return stats
