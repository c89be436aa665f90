"""Held-out whole-word MLM accuracy, comparable across vocabularies.

Token-level MLM accuracy is not comparable between two tokenizers: one
that spells a word in one piece is scored on one easy prediction, one that
spells it in four on four. Here the unit is the word:

- windows of WINDOW_WORDS consecutive whitespace-separated words of held-out
  text (words as the model sees them: SentencePiece starts a piece at each
  space, so a word's pieces alone are its pieces in context);
- in each window the same words are masked whatever the tokenizer (chosen
  with a seed, about 15%, at least one, among the identifier-like words:
  letters, digits and underscores, at most MAX_MASKED_CHARS characters;
  a run such as `self._sock.close()` is left in the context): every piece
  of a masked word becomes [MASK];
- a word counts as correct only if every one of its pieces is predicted
  (the argmax of the MLM logits at its position is the true id);
- a window that does not fit the sequence under any of the compared
  tokenizers is left out for all of them (fitting_windows).

Sequences are [CLS] pieces [SEP], one segment.
"""

import dataclasses
import random
import re
from typing import List, Optional, Sequence

import numpy as np

WINDOW_WORDS = 12
MAX_MASKED_CHARS = 12
MASKED_FRACTION = 0.15
IDENTIFIER = re.compile(r"[^\W\d]\w*")


def word_windows(documents: Sequence[Sequence[str]], count: int, seed: int,
                 words: int = WINDOW_WORDS) -> List[List[str]]:
  """`count` windows of `words` consecutive words (a document's lines read
  as one text), drawn with `seed` from every full window of every
  document (all of them when there are fewer)."""
  windows = []
  for lines in documents:
    stream = " ".join(lines).split()
    windows.extend(stream[i:i + words]
                   for i in range(0, len(stream) - words + 1, words))
  rng = random.Random(seed)
  return rng.sample(windows, min(count, len(windows)))


def masked_words(window: Sequence[str], seed: int) -> List[int]:
  """Indices of the words to mask in `window` (sorted): MASKED_FRACTION of
  its words rounded, at least one, among those of at most
  MAX_MASKED_CHARS characters of letters, digits and underscores (not
  starting with a digit); [] when it has none. Depends only on the words
  and `seed`, never on a tokenizer."""
  candidates = [i for i, w in enumerate(window)
                if len(w) <= MAX_MASKED_CHARS and IDENTIFIER.fullmatch(w)]
  if not candidates:
    return []
  count = min(len(candidates), max(1, round(MASKED_FRACTION * len(window))))
  return sorted(random.Random(seed).sample(candidates, count))


@dataclasses.dataclass
class MaskedSequence:
  """One window, masked.

  input_ids: int list [length <= seq_length], [CLS] ... [SEP].
  positions: int list [M], the masked pieces' positions in input_ids.
  labels: int list [M], their true ids.
  words: one (start, end) slice of positions / labels per masked word.
  """
  input_ids: List[int]
  positions: List[int]
  labels: List[int]
  words: List[tuple]


def mask_whole_words(word_ids: Sequence[Sequence[int]],
                     masked: Sequence[int], cls_id: int, sep_id: int,
                     mask_id: int, seq_length: int
                     ) -> Optional[MaskedSequence]:
  """The sequence of a window whose words have ids `word_ids` (one list
  per word), every piece of the words at `masked` replaced by `mask_id`;
  None when it is longer than `seq_length`."""
  input_ids, positions, labels, words = [cls_id], [], [], []
  masked = set(masked)
  for index, ids in enumerate(word_ids):
    if index in masked:
      start = len(positions)
      for piece in ids:
        positions.append(len(input_ids))
        labels.append(piece)
        input_ids.append(mask_id)
      words.append((start, len(positions)))
    else:
      input_ids.extend(ids)
  input_ids.append(sep_id)
  if len(input_ids) > seq_length:
    return None
  return MaskedSequence(input_ids, positions, labels, words)


def words_correct(sequence: MaskedSequence,
                  predicted: Sequence[int]) -> List[bool]:
  """Per masked word: every piece predicted. predicted: int [M], the
  argmax at each of the sequence's positions."""
  hits = [int(p) == t for p, t in zip(predicted, sequence.labels)]
  return [all(hits[start:end]) for start, end in sequence.words]


def tokenize_window(tokenizer, window: Sequence[str]) -> List[List[int]]:
  """The ids of each word of `window` under a SentencePieceTokenizer."""
  return [tokenizer.encode(word) for word in window]


def fitting_windows(windows: Sequence[Sequence[str]], tokenizers: Sequence,
                    seq_length: int) -> List[int]:
  """Indices of the windows every tokenizer fits in `seq_length` with
  [CLS] and [SEP]."""
  return [i for i, window in enumerate(windows)
          if all(sum(len(ids) for ids in tokenize_window(t, window)) + 2
                 <= seq_length for t in tokenizers)]


def sequences(tokenizer, windows: Sequence[Sequence[str]], seed: int,
              seq_length: int) -> List[MaskedSequence]:
  """The masked sequence of each window with a masked word (window i
  masked with seed + i)."""
  out = []
  for i, window in enumerate(windows):
    masked = masked_words(window, seed + i)
    if not masked:
      continue
    sequence = mask_whole_words(tokenize_window(tokenizer, window), masked,
                                tokenizer.cls_id, tokenizer.sep_id,
                                tokenizer.mask_id, seq_length)
    if sequence is None:
      raise ValueError(f"window {i} does not fit {seq_length}: filter "
                       "with fitting_windows first")
    out.append(sequence)
  return out


def whole_word_accuracy(pretrainer, batch: Sequence[MaskedSequence],
                        seq_length: int, batch_size: int = 64) -> dict:
  """{"accuracy", "words"} of an AlbertPretrainer on masked sequences."""
  correct = []
  for start in range(0, len(batch), batch_size):
    chunk = batch[start:start + batch_size]
    width = max(len(s.positions) for s in chunk)
    ids = np.zeros((len(chunk), seq_length), np.int32)
    mask = np.zeros_like(ids)
    positions = np.zeros((len(chunk), width), np.int32)
    for row, s in enumerate(chunk):
      ids[row, :len(s.input_ids)] = s.input_ids
      mask[row, :len(s.input_ids)] = 1
      positions[row, :len(s.positions)] = s.positions
    logits = pretrainer(dict(input_word_ids=ids, input_mask=mask,
                             input_type_ids=np.zeros_like(ids),
                             masked_lm_positions=positions),
                        training=False)["mlm_logits"]
    predicted = np.argmax(np.asarray(logits), axis=-1)  # [b, width]
    for row, s in enumerate(chunk):
      correct.extend(words_correct(s, predicted[row, :len(s.positions)]))
  return {"accuracy": float(np.mean(correct)) if correct else 0.0,
          "words": len(correct)}


def unknown_rate(tokenizer, lines: Sequence[str]) -> float:
  """The share of pieces that are <unk> when `lines` are tokenized."""
  pieces = unknown = 0
  for line in lines:
    ids = tokenizer.encode(line)
    pieces += len(ids)
    unknown += sum(1 for i in ids if i == tokenizer.unk_id)
  return unknown / max(1, pieces)
