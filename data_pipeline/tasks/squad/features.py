"""SQuAD examples -> model features: sliding windows over the paragraph.

Follows google-research/albert `squad_utils.py`:
  * the paragraph is split into pieces, each mapped to a character range of
    the original paragraph (`sentencepiece_offsets`, `wordpiece_offsets`);
  * the question is truncated to `max_query_length` pieces;
  * a paragraph longer than the window is cut into windows of up to
    `max_seq_length - len(query) - 3` pieces, starting every `doc_stride`
    pieces; each piece scores in the window where it has the most context;
  * the input is `[CLS] question [SEP] paragraph-window [SEP]`, segment ids
    0 then 1; `p_mask` is 1 where an answer cannot start or end (question,
    separators, padding), 0 on [CLS] and the paragraph;
  * a training window that does not contain the whole answer (and every
    window of an unanswerable question) points at [CLS] (position 0) and is
    marked impossible.

Examples are read by `squad_examples`.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline.tasks.squad.examples import SquadExample
from data_pipeline.tokenization import sentencepiece_offsets
from data_pipeline.tokenization import wordpiece_offsets
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)
from data_pipeline.tokenization.tokenized_paragraph import TokenizedParagraph

FIRST_UNIQUE_ID = 1000000000  # as the official code


@dataclasses.dataclass
class SquadFeature:
  """One window of one example, model-ready.

  Attributes:
    unique_id: int, from FIRST_UNIQUE_ID on.
    example_index: int, index of the example in the list converted.
    doc_span_index: int, window number within the example.
    tokens: list of str pieces, [CLS] question [SEP] window [SEP] (unpadded).
    input_ids, input_mask, segment_ids, p_mask: int lists [max_seq_length].
    doc_offset: int, position of the window's first piece (len(query) + 2).
    tok_start_to_orig_index, tok_end_to_orig_index: per window piece, the
      first / last character of the original paragraph it covers.
    token_is_max_context: per window piece, whether this window gives it the
      most context of all windows.
    start_position, end_position: int training targets (0 = [CLS]).
    is_impossible: bool, the window holds no answer (training).
  """
  unique_id: int
  example_index: int
  doc_span_index: int
  tokens: List[str]
  input_ids: List[int]
  input_mask: List[int]
  segment_ids: List[int]
  p_mask: List[int]
  doc_offset: int
  tok_start_to_orig_index: List[int]
  tok_end_to_orig_index: List[int]
  token_is_max_context: List[bool]
  start_position: int = 0
  end_position: int = 0
  is_impossible: bool = False

  def doc_index(self, position: int) -> Optional[int]:
    """Index into the window's pieces of input `position`; None outside."""
    index = position - self.doc_offset
    if 0 <= index < len(self.tok_start_to_orig_index):
      return index
    return None


def tokenize_paragraph(tokenizer, paragraph_text: str) -> TokenizedParagraph:
  """Pieces of a paragraph, each mapped to a range of the original text.

  A SentencePieceTokenizer's (`sentencepiece_offsets`) or a
  WordPieceTokenizer's (`wordpiece_offsets`).
  """
  if hasattr(tokenizer, "sp_model"):
    return sentencepiece_offsets.tokenize_paragraph(tokenizer, paragraph_text)
  return wordpiece_offsets.tokenize_paragraph(tokenizer, paragraph_text)


def _is_max_context(doc_spans, span_index, position):
  """Whether window `span_index` gives `position` its most context."""
  best_score, best_index = None, None
  for index, (start, length) in enumerate(doc_spans):
    end = start + length - 1
    if not start <= position <= end:
      continue
    score = min(position - start, end - position) + 0.01 * length
    if best_score is None or score > best_score:
      best_score, best_index = score, index
  return span_index == best_index


def convert_examples_to_features(examples: Sequence[SquadExample],
                                 tokenizer: SentencePieceTokenizer,
                                 max_seq_length: int = 384,
                                 doc_stride: int = 128,
                                 max_query_length: int = 64,
                                 is_training: bool = False
                                ) -> List[SquadFeature]:
  """Windows of every example (see the module docstring).

  Raises:
    UserInputError: if `max_seq_length` leaves no room for the paragraph
      after a question of `max_query_length` pieces, or a bad stride.
  """
  if doc_stride <= 0:
    raise UserInputError(f"--doc_stride must be positive, got {doc_stride}")
  if max_seq_length - max_query_length - 3 <= 0:
    raise UserInputError(
        f"--max_seq_length ({max_seq_length}) must exceed --max_query_length "
        f"({max_query_length}) + 3")
  features = []
  for example_index, example in enumerate(examples):
    features.extend(_example_features(
        example, example_index, FIRST_UNIQUE_ID + len(features), tokenizer,
        max_seq_length, doc_stride, max_query_length, is_training))
  return features


def _example_features(example: SquadExample, example_index: int,
                      first_unique_id: int,
                      tokenizer: SentencePieceTokenizer, max_seq_length: int,
                      doc_stride: int, max_query_length: int,
                      is_training: bool) -> List[SquadFeature]:
  """The windows of one example, numbered from `first_unique_id`."""
  query_pieces = tokenizer.tokenize(example.question_text)[:max_query_length]
  query_ids = tokenizer.convert_tokens_to_ids(query_pieces)
  para = tokenize_paragraph(tokenizer, example.paragraph_text)
  answer = None  # (first, last) paragraph piece of the answer (training).
  if is_training and not example.is_impossible:
    answer = para.char_span_to_tokens(
        example.answer_start,
        example.answer_start + len(example.answer_text) - 1)
  doc_spans = _doc_spans(len(para.ids), max_seq_length - len(query_ids) - 3,
                         doc_stride)
  doc_offset = len(query_ids) + 2
  features = []
  for span_index, (span_start, span_length) in enumerate(doc_spans):
    window = range(span_start, span_start + span_length)
    start_position = end_position = 0
    is_impossible = bool(is_training and example.is_impossible)
    if answer is not None:
      start_position, end_position, inside = _answer_positions(
          answer, span_start, span_length, doc_offset)
      is_impossible = not inside
    features.append(SquadFeature(
        unique_id=first_unique_id + span_index, example_index=example_index,
        doc_span_index=span_index, doc_offset=doc_offset,
        **_window_inputs(tokenizer, query_pieces, query_ids, para, window,
                         max_seq_length),
        tok_start_to_orig_index=[para.tok_start_to_orig_index[i]
                                 for i in window],
        tok_end_to_orig_index=[para.tok_end_to_orig_index[i]
                               for i in window],
        token_is_max_context=[_is_max_context(doc_spans, span_index, i)
                              for i in window],
        start_position=start_position, end_position=end_position,
        is_impossible=is_impossible))
  return features


def _doc_spans(num_pieces: int, max_tokens_for_doc: int,
               doc_stride: int) -> List[Tuple[int, int]]:
  """(start, length) of the windows over a paragraph of `num_pieces`."""
  doc_spans = []
  start_offset = 0
  while start_offset < num_pieces:
    length = min(num_pieces - start_offset, max_tokens_for_doc)
    doc_spans.append((start_offset, length))
    if start_offset + length == num_pieces:
      break
    start_offset += min(length, doc_stride)
  return doc_spans


def _window_inputs(tokenizer: SentencePieceTokenizer, query_pieces: List[str],
                   query_ids: List[int], para: TokenizedParagraph,
                   window: range, max_seq_length: int) -> Dict[str, list]:
  """[CLS] question [SEP] window [SEP], padded: SquadFeature's tokens,
  input_ids, input_mask, segment_ids and p_mask."""
  doc_offset = len(query_ids) + 2
  tokens = (["[CLS]"] + query_pieces + ["[SEP]"] +
            [para.pieces[i] for i in window] + ["[SEP]"])
  input_ids = ([tokenizer.cls_id] + query_ids + [tokenizer.sep_id] +
               [para.ids[i] for i in window] + [tokenizer.sep_id])
  segment_ids = [0] * doc_offset + [1] * (len(window) + 1)
  p_mask = [0] + [1] * (len(query_ids) + 1) + [0] * len(window) + [1]
  input_mask = [1] * len(input_ids)
  padding = max_seq_length - len(input_ids)
  input_ids += [tokenizer.pad_id] * padding
  input_mask += [0] * padding
  segment_ids += [0] * padding
  p_mask += [1] * padding
  return dict(tokens=tokens, input_ids=input_ids, input_mask=input_mask,
              segment_ids=segment_ids, p_mask=p_mask)


def _answer_positions(answer: Tuple[int, int], span_start: int,
                      span_length: int, doc_offset: int):
  """(start, end, True): input positions of the answer pieces in a window,
  or (0, 0, False) where the window does not hold them whole."""
  tok_start, tok_end = answer
  if span_start <= tok_start and tok_end < span_start + span_length:
    return (tok_start - span_start + doc_offset,
            tok_end - span_start + doc_offset, True)
  return 0, 0, False


def features_to_arrays(features: Sequence[SquadFeature],
                       is_training: bool) -> Dict[str, np.ndarray]:
  """Stacks features into model inputs (and training targets).

  Returns:
    dict of numpy arrays: unique_ids int64 [n]; input_word_ids, input_mask,
    input_type_ids, p_mask int32 [n, seq]; with `is_training` also
    start_positions, end_positions, is_impossible int32 [n].
  """
  arrays = {
      "unique_ids": np.array([f.unique_id for f in features], np.int64),
      INPUT_WORD_IDS: np.array([f.input_ids for f in features], np.int32),
      INPUT_MASK: np.array([f.input_mask for f in features], np.int32),
      INPUT_TYPE_IDS: np.array([f.segment_ids for f in features], np.int32),
      "p_mask": np.array([f.p_mask for f in features], np.int32)}
  if is_training:
    arrays.update(
        start_positions=np.array([f.start_position for f in features],
                                 np.int32),
        end_positions=np.array([f.end_position for f in features], np.int32),
        is_impossible=np.array([int(f.is_impossible) for f in features],
                               np.int32))
  return arrays
