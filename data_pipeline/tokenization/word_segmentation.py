"""Chinese word segmentation for whole-word masking (`--word_segmenter`).

`none` (the default) is the official rule: BERT's basic tokenizer makes
every CJK character a word of its own, and a WordPiece piece starts a word
unless it begins with "##" (`start_piece_table`, one flag per vocabulary
id).

`jieba` segments each sentence with jieba, as albert_zh and HFL's Chinese
BERT-wwm did, and applies the rule of Hugging Face's `run_chinese_ref.py`:
a CJK character continues the word of the CJK character before it when
jieba puts both in one word. Ids do not change (one per character); only
which tokens start a word does, so it is a flag per token (it depends on
the context), carried with the ids into instance building and masking:
whole-word and n-gram masking mask a multi-character Chinese word whole or
not at all, and `token_boundary` marks the segmented word starts. Tokens
that are not CJK characters keep the WordPiece rule.

jieba's dictionary loads once per process, on first use
(`jieba_tokenizer`), with its log lines silenced. Segmentation is
deterministic (the bundled dictionary, HMM for unknown words), so the
output does not depend on the number of workers.
"""

import functools
import importlib.util
import logging
from typing import Dict, List, Optional, Sequence, Tuple

from albert_common.errors import UserInputError
from data_pipeline.tokenization.wordpiece_tokenizer import WordPieceTokenizer
from data_pipeline.tokenization.wordpiece_tokenizer import basic_tokenize
from data_pipeline.tokenization.wordpiece_tokenizer import is_cjk

WORD_SEGMENTERS = ("none", "jieba")


def check_word_segmenter(word_segmenter: str, spm_model_file: Optional[str],
                         vocab_file: Optional[str]) -> None:
  """Raises UserInputError (one line, naming the flag) for a bad choice."""
  if word_segmenter not in WORD_SEGMENTERS:
    raise UserInputError(f"--word_segmenter={word_segmenter}: not one of "
                         f"{', '.join(WORD_SEGMENTERS)}")
  if word_segmenter == "none":
    return
  if spm_model_file or not vocab_file:
    given = ("--spm_model_file is given" if spm_model_file else
             "no --vocab_file is given")
    raise UserInputError(
        f"--word_segmenter={word_segmenter} needs a WordPiece --vocab_file "
        f"(one id per Chinese character) and no --spm_model_file; {given}")
  if importlib.util.find_spec(word_segmenter) is None:
    raise UserInputError(
        f"--word_segmenter={word_segmenter} needs the {word_segmenter} "
        f"package: pip install {word_segmenter}==0.42.1")


@functools.lru_cache(maxsize=1)
def jieba_tokenizer():
  """This process's `jieba.Tokenizer`, its dictionary loaded (once)."""
  import jieba
  jieba.setLogLevel(logging.WARNING)  # "Building prefix dict ..." lines.
  tokenizer = jieba.Tokenizer()
  tokenizer.initialize()
  return tokenizer


_CJK: Dict[str, bool] = {}


def _is_cjk(char: str) -> bool:
  cjk = _CJK.get(char)
  if cjk is None:
    cjk = _CJK[char] = is_cjk(char)
  return cjk


def cjk_continuations(text: str) -> List[bool]:
  """One flag per CJK character of `text`, in order: True if jieba puts it
  in one word with the CJK character right before it."""
  flags = []
  for word in jieba_tokenizer().cut(text):
    previous_cjk = False
    for char in word:
      cjk = _is_cjk(char)
      if cjk:
        flags.append(previous_cjk)
      previous_cjk = cjk
  return flags


class JiebaWordStarts:
  """WordPiece ids of sentences and, per token, whether it starts a word.

  Args:
    tokenizer: the WordPieceTokenizer; ids are its `encode`'s.
  """

  def __init__(self, tokenizer: WordPieceTokenizer):
    self._tokenizer = tokenizer
    self._start_piece = tokenizer.start_piece_table().tolist()

  def encode(self, text: str) -> Tuple[List[int], List[bool]]:
    """(ids, starts): ids as `tokenizer.encode(text)`, one bool each."""
    continues = cjk_continuations(text)
    ids, starts = [], []
    cjk_index = 0
    for word in basic_tokenize(text, self._tokenizer.do_lower_case):
      word_ids = self._tokenizer.encode_word(word)
      ids.extend(word_ids)
      # BERT's cleaning makes every CJK character a word of its own, in
      # text order: the k-th such word is the text's k-th CJK character.
      if (len(word) == 1 and _is_cjk(word) and len(word_ids) == 1 and
          cjk_index < len(continues)):
        starts.append(not continues[cjk_index])
        cjk_index += 1
      else:
        starts.extend(self._start_piece[i] for i in word_ids)
    return ids, starts

  def encode_batch(self, texts: Sequence[str]
                   ) -> Tuple[List[List[int]], List[List[bool]]]:
    """`encode` of every text: (list of ids, list of starts)."""
    pairs = [self.encode(t) for t in texts]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def make_word_starts(word_segmenter: str, tokenizer
                     ) -> Optional[JiebaWordStarts]:
  """The segmenter of `--word_segmenter`, or None for `none` (the
  vocabulary's start-piece table is used)."""
  if word_segmenter in (None, "none"):
    return None
  return JiebaWordStarts(tokenizer)
