"""Words and tags -> windows of pieces the model reads, and back.

Alignment: every word is tokenized on its own (SentencePiece's "▁" word
start, or WordPiece's "##" continuations); its tag goes to its first piece,
and the other pieces get -1, ignored by the loss and never read at
prediction. A word with no piece at all (a lone combining accent, a
zero-width space) gets one [UNK], so every word has a first piece.

Windows: a sentence's pieces are cut into windows of max_seq_length - 2
(`[CLS] piece ... [SEP]`) whose starts are min(doc_stride, max_seq_length -
2) pieces apart, as SQuAD's document windows; each word is predicted from
the window where its first piece has the most context (SQuAD's max-context
rule: the largest min(left, right) + 0.01 * window length, the first such
window). So no word is dropped and each has exactly one prediction.
Training uses every window, each word's tag on its first piece in each.

The raw-text export (albert_tf.exports.serving.ner_serving) builds the same
windows in-graph.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS

LABEL_IDS = "label_ids"
IGNORED = -1  # label of pieces that are not a word's first piece


@dataclasses.dataclass
class NerFeatures:
  """The windows of a file's sentences and where each word is predicted.

  Attributes:
    arrays: input_word_ids, input_mask, input_type_ids, label_ids: int32
      [windows, max_seq_length] (label_ids: the tag id at each word's first
      piece, IGNORED elsewhere and for unlabeled files).
    word_window: int64 [words]: the window predicting each word (words of
      all sentences in order).
    word_position: int64 [words]: its first piece's position there.
    sentence_lengths: words per sentence.
  """
  arrays: Dict[str, np.ndarray]
  word_window: np.ndarray
  word_position: np.ndarray
  sentence_lengths: List[int]

  @property
  def num_windows(self) -> int:
    return len(self.arrays[INPUT_WORD_IDS])

  def by_sentence(self, per_word: Sequence) -> List[list]:
    """A per-word sequence cut into one list per sentence."""
    out, at = [], 0
    for length in self.sentence_lengths:
      out.append(list(per_word[at:at + length]))
      at += length
    return out


def word_piece_ids(tokenizer, words: Sequence[str]) -> List[List[int]]:
  """Each word's piece ids, tokenized alone; [UNK] for a word with none."""
  ids = tokenizer.encode_batch(list(words)) if words else []
  unk = tokenizer.unk_id
  return [list(p) if len(p) else [unk] for p in ids]


def windows(num_pieces: int, max_pieces: int,
            doc_stride: int) -> List[Tuple[int, int]]:
  """(start, length) of the windows over `num_pieces` pieces, each at most
  `max_pieces` long, starts min(doc_stride, max_pieces) apart; one
  (possibly empty) window at least."""
  step = min(doc_stride, max_pieces)
  count = 1 + max(0, -(-(num_pieces - max_pieces) // step))
  return [(k * step, min(num_pieces - k * step, max_pieces))
          for k in range(count)]


def max_context_window(spans: Sequence[Tuple[int, int]], piece: int) -> int:
  """The window (index into `spans`) where `piece` has the most context."""
  best, best_score = 0, None
  for k, (start, length) in enumerate(spans):
    if not start <= piece < start + length:
      continue
    score = min(piece - start, start + length - 1 - piece) + 0.01 * length
    if best_score is None or score > best_score:
      best, best_score = k, score
  return best


def featurize(sentences: Sequence[Sequence[str]],
              tag_ids: Optional[Sequence[Sequence[int]]], tokenizer,
              max_seq_length: int, doc_stride: int) -> NerFeatures:
  """The windows of `sentences`.

  Args:
    sentences: each a list of words.
    tag_ids: each word's tag index (None: unlabeled).
    tokenizer: SentencePieceTokenizer or WordPieceTokenizer.
    max_seq_length: positions per window, [CLS] and [SEP] included.
    doc_stride: pieces between window starts (capped at max_seq_length - 2).

  Returns:
    NerFeatures. A sentence without words has no window.
  """
  max_pieces = max_seq_length - 2
  flat = [w for words in sentences for w in words]
  pieces_of_word = iter(word_piece_ids(tokenizer, flat))
  rows = {k: [] for k in (INPUT_WORD_IDS, INPUT_MASK, LABEL_IDS)}
  word_window, word_position = [], []
  for s, words in enumerate(sentences):
    if not words:
      continue
    pieces, labels, first = [], [], []
    for w in range(len(words)):
      ids = next(pieces_of_word)
      first.append(len(pieces))
      pieces.extend(ids)
      labels.extend([tag_ids[s][w] if tag_ids is not None else IGNORED] +
                    [IGNORED] * (len(ids) - 1))
    spans = windows(len(pieces), max_pieces, doc_stride)
    base = len(rows[INPUT_WORD_IDS])
    for start, length in spans:
      body = pieces[start:start + length]
      padding = max_seq_length - length - 2
      rows[INPUT_WORD_IDS].append([tokenizer.cls_id] + body +
                                  [tokenizer.sep_id] +
                                  [tokenizer.pad_id] * padding)
      rows[INPUT_MASK].append([1] * (length + 2) + [0] * padding)
      rows[LABEL_IDS].append([IGNORED] + labels[start:start + length] +
                             [IGNORED] * (padding + 1))
    for piece in first:
      k = max_context_window(spans, piece)
      word_window.append(base + k)
      word_position.append(piece - spans[k][0] + 1)
  arrays = {k: np.array(v, np.int32).reshape(-1, max_seq_length)
            for k, v in rows.items()}
  arrays[INPUT_TYPE_IDS] = np.zeros_like(arrays[INPUT_MASK])
  return NerFeatures(arrays, np.array(word_window, np.int64),
                     np.array(word_position, np.int64),
                     [len(words) for words in sentences])


def word_probabilities(window_logits: np.ndarray,
                       features: NerFeatures) -> np.ndarray:
  """float [words, labels]: each word's tag probabilities (softmax) from
  its max-context window. window_logits: [windows, seq (or less: a
  length bucket), labels]."""
  logits = window_logits[features.word_window, features.word_position]
  logits = logits.astype(np.float64)
  logits -= logits.max(axis=-1, keepdims=True)
  exp = np.exp(logits)
  return exp / exp.sum(axis=-1, keepdims=True)
