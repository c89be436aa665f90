"""SQuAD v1.1 / v2.0: JSON reader, SentencePiece alignment, sliding windows.

Follows google-research/albert `squad_utils.py`:
  * the paragraph is normalised with `preprocess_text` and split into
    SentencePiece pieces; every piece is mapped back to a character range of
    the ORIGINAL paragraph, so an answer is always cut out of the original
    text (`paragraph[start:end + 1].strip()`);
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

The official code aligns characters with an approximate longest-common-
subsequence; here the normalisation is replayed character by character, so
the map is exact (with a `difflib` fallback if a future normalisation rule
were not character-local).
"""

import dataclasses
import difflib
import json
from typing import Dict, List, Optional, Sequence, Tuple
import unicodedata

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline.tokenization import SPIECE_UNDERLINE
from data_pipeline.tokenization import SentencePieceTokenizer
from data_pipeline.tokenization import encode_pieces
from data_pipeline.tokenization import preprocess_text

FIRST_UNIQUE_ID = 1000000000  # as the official code


@dataclasses.dataclass
class SquadExample:
  """One question about one paragraph.

  Attributes:
    qas_id: str, the question id.
    question_text, paragraph_text: str, as in the JSON file.
    answer_text: str, the first answer ("" if impossible or not training).
    answer_start: int, its character offset in `paragraph_text` (-1 if none).
    is_impossible: bool, SQuAD v2.0 unanswerable question.
    answers: list of str, every gold answer text (for reference only).
  """
  qas_id: str
  question_text: str
  paragraph_text: str
  answer_text: str = ""
  answer_start: int = -1
  is_impossible: bool = False
  answers: List[str] = dataclasses.field(default_factory=list)


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


# ---------------------------------------------------------------------------
# Reading.


def load_squad_json(input_file: str) -> List[dict]:
  """The `data` list of a SQuAD JSON file; UserInputError naming the file."""
  if not file_io.isfile(input_file):
    raise UserInputError(f"SQuAD file not found: {input_file}")
  try:
    content = json.loads(file_io.read_text(input_file))
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise UserInputError(f"{input_file}: not a SQuAD JSON file: {e}") from e
  if not isinstance(content, dict) or not isinstance(content.get("data"),
                                                     list):
    raise UserInputError(
        f"{input_file}: not a SQuAD JSON file: expected an object with a "
        "'data' list of articles")
  return content["data"]


def read_squad_examples(input_file: str, is_training: bool,
                        version_2_with_negative: bool = False
                       ) -> List[SquadExample]:
  """Reads a SQuAD v1.1 / v2.0 JSON file.

  Args:
    input_file: path of the JSON file.
    is_training: if True every answerable question must have an answer whose
      `text` equals `context[answer_start:answer_start + len(text)]`.
    version_2_with_negative: accept `is_impossible` questions (SQuAD v2.0).

  Raises:
    UserInputError: naming the file (and question id) for a missing `data`
      list, a missing field, an impossible question without
      --version_2_with_negative, or an answer that is not in the context.
  """
  data = load_squad_json(input_file)
  examples = []
  for a, article in enumerate(data):
    paragraphs = (article.get("paragraphs") if isinstance(article, dict)
                  else None)
    if not isinstance(paragraphs, list):
      raise UserInputError(
          f"{input_file}: data[{a}] has no 'paragraphs' list")
    for p, paragraph in enumerate(paragraphs):
      where = f"{input_file}: data[{a}].paragraphs[{p}]"
      if not isinstance(paragraph.get("context"), str) or not isinstance(
          paragraph.get("qas"), list):
        raise UserInputError(f"{where} needs a 'context' string and a 'qas' "
                             "list")
      context = paragraph["context"]
      for qa in paragraph["qas"]:
        examples.append(_read_question(qa, context, where, is_training,
                                       version_2_with_negative))
  if not examples:
    raise UserInputError(f"{input_file}: no questions")
  return examples


def _read_question(qa, context, where, is_training, version_2_with_negative):
  if "id" not in qa or not isinstance(qa.get("question"), str):
    raise UserInputError(f"{where}: a question lacks 'id' or 'question'")
  qid = str(qa["id"])
  where = f"{where}: question {qid}"
  is_impossible = bool(qa.get("is_impossible", False))
  if is_impossible and not version_2_with_negative:
    raise UserInputError(
        f"{where} is marked is_impossible; pass --version_2_with_negative "
        "for SQuAD v2.0 data")
  answers = qa.get("answers", [])
  if not isinstance(answers, list):
    raise UserInputError(f"{where}: 'answers' is not a list")
  texts = []
  for answer in answers:
    if not isinstance(answer, dict) or "text" not in answer:
      raise UserInputError(f"{where}: an answer lacks 'text'")
    texts.append(answer["text"])
  example = SquadExample(qas_id=qid, question_text=qa["question"],
                         paragraph_text=context, is_impossible=is_impossible,
                         answers=texts)
  if not is_training or is_impossible:
    return example
  if not answers:
    raise UserInputError(f"{where} has no answer (training needs one)")
  text, start = answers[0]["text"], answers[0].get("answer_start")
  if not isinstance(start, int) or not text.strip():
    raise UserInputError(
        f"{where}: answer needs a non-empty 'text' and an integer "
        "'answer_start'")
  found = context[start:start + len(text)] if start >= 0 else ""
  if found != text:
    raise UserInputError(
        f"{where}: answer {text!r} is not in the context at answer_start "
        f"{start} (found {found!r})")
  example.answer_text = text
  example.answer_start = start
  return example


# ---------------------------------------------------------------------------
# Character alignment.


def normalize_with_offsets(text: str, do_lower_case: bool = True,
                           keep_accents: bool = False
                          ) -> Tuple[str, List[int]]:
  """`preprocess_text(text)` and, per output char, its index in `text`.

  Replays the normalisation (strip and collapse whitespace, `` and '' to ",
  NFKD and accent removal, lowercasing) one original character at a time.
  If the result ever differs from `preprocess_text` (a rule that is not
  character-local), the offsets are re-derived with difflib.
  """
  chars, offsets = [], []
  stripped_start = len(text) - len(text.lstrip())
  end = len(text.rstrip())
  i = stripped_start
  while i < end:
    c = text[i]
    if c.isspace():
      chars.append(" ")
      offsets.append(i)
      while i < end and text[i].isspace():
        i += 1
      continue
    if text[i:i + 2] in ("``", "''"):
      pieces, width = '"', 2
    else:
      pieces, width = c, 1
    if not keep_accents:
      pieces = "".join(ch for ch in unicodedata.normalize("NFKD", pieces)
                       if not unicodedata.combining(ch))
    if do_lower_case:
      pieces = pieces.lower()
    for ch in pieces:
      chars.append(ch)
      offsets.append(i)
    i += width
  replayed = "".join(chars)
  expected = preprocess_text(text, keep_accents=keep_accents,
                             lower=do_lower_case)
  if replayed == expected:
    return expected, offsets
  return expected, _fill(_align(expected, replayed, offsets), len(text))


def _align(target: str, source: str, source_values: Sequence[int]
          ) -> List[Optional[int]]:
  """For each char of `target`, the value of the matching char of `source`."""
  out = [None] * len(target)
  matcher = difflib.SequenceMatcher(None, target, source, autojunk=False)
  for block in matcher.get_matching_blocks():
    for k in range(block.size):
      out[block.a + k] = source_values[block.b + k]
  return out


def _fill(values: List[Optional[int]], default: int) -> List[int]:
  """Replaces None by the previous value (or the next one at the start)."""
  out, last = [], None
  for v in values:
    last = v if v is not None else last
    out.append(last)
  nxt = None
  for k in range(len(out) - 1, -1, -1):
    if out[k] is None:
      out[k] = nxt if nxt is not None else default
    nxt = out[k]
  return out


@dataclasses.dataclass
class TokenizedParagraph:
  """A paragraph's pieces and their character ranges in the original text.

  Attributes:
    pieces: list of str.
    ids: list of int.
    tok_start_to_orig_index, tok_end_to_orig_index: per piece, the first and
      last original character it covers (end includes characters the
      normalisation dropped right after it, e.g. combining accents).
    orig_to_tok_index: per original character, the piece holding it (or the
      next piece for characters the normalisation dropped).
  """
  pieces: List[str]
  ids: List[int]
  tok_start_to_orig_index: List[int]
  tok_end_to_orig_index: List[int]
  orig_to_tok_index: List[int]

  def char_span_to_tokens(self, char_start: int, char_end: int
                         ) -> Tuple[int, int]:
    """Pieces (first, last) covering original characters [start, end]."""
    return (self.orig_to_tok_index[char_start],
            self.orig_to_tok_index[char_end])


def tokenize_paragraph(tokenizer: SentencePieceTokenizer,
                       paragraph_text: str) -> TokenizedParagraph:
  """Pieces of a paragraph, each mapped to a range of the original text.

  A WordPieceTokenizer's: see data_pipeline.wordpiece_offsets.
  """
  if not hasattr(tokenizer, "sp_model"):
    from data_pipeline import wordpiece_offsets
    return wordpiece_offsets.tokenize_paragraph(tokenizer, paragraph_text)
  normalized, norm_to_orig = normalize_with_offsets(
      paragraph_text, tokenizer.do_lower_case, tokenizer.keep_accents)
  pieces = encode_pieces(tokenizer.sp_model, normalized)
  # Piece characters, "▁" read as a space, against the normalised text.
  cat_chars, cat_tok = [], []
  for t, piece in enumerate(pieces):
    for ch in piece.replace(SPIECE_UNDERLINE, " "):
      cat_chars.append(ch)
      cat_tok.append(t)
  cat = "".join(cat_chars)
  cat_to_norm = _align_cat(cat, normalized)

  n = len(paragraph_text)
  starts = [None] * len(pieces)
  ends = [None] * len(pieces)
  for k, norm_index in enumerate(cat_to_norm):
    if norm_index is None:
      continue
    t, orig = cat_tok[k], norm_to_orig[norm_index]
    starts[t] = orig if starts[t] is None else min(starts[t], orig)
    ends[t] = orig if ends[t] is None else max(ends[t], orig)
  # Pieces with no character of their own (the leading "▁"): empty range at
  # the next piece's start.
  for t in range(len(pieces) - 1, -1, -1):
    if starts[t] is None:
      nxt = starts[t + 1] if t + 1 < len(pieces) else n
      starts[t], ends[t] = nxt, nxt - 1
  # Extend each end over original characters nothing maps to (dropped
  # accents, the second char of '' ...) up to the next kept character.
  kept = sorted(set(norm_to_orig))
  next_kept = {}
  for a, b in zip(kept, kept[1:] + [n]):
    next_kept[a] = b
  tok_end = [next_kept.get(e, e + 1) - 1 if e >= 0 else e for e in ends]

  orig_to_tok = [None] * n
  for t in range(len(pieces)):
    for i in range(starts[t], max(starts[t], tok_end[t] + 1)):
      if orig_to_tok[i] is None:
        orig_to_tok[i] = t
  # Characters before the first kept character (leading spaces) belong to
  # the first piece that follows.
  orig_to_tok = _fill_forward(orig_to_tok, len(pieces) - 1)
  return TokenizedParagraph(
      pieces=pieces, ids=tokenizer.convert_tokens_to_ids(pieces),
      tok_start_to_orig_index=starts, tok_end_to_orig_index=tok_end,
      orig_to_tok_index=orig_to_tok)


def _align_cat(cat: str, normalized: str) -> List[Optional[int]]:
  """For each char of the joined pieces, its index in `normalized` or None."""
  out, j = [], 0
  for ch in cat:
    if j < len(normalized) and normalized[j] == ch:
      out.append(j)
      j += 1
    elif ch == " ":
      out.append(None)  # SentencePiece's dummy prefix
    else:
      return _align(cat, normalized, range(len(normalized)))
  return out


def _fill_forward(values: List[Optional[int]], last: int) -> List[int]:
  out, nxt = list(values), None
  for k in range(len(out) - 1, -1, -1):
    if out[k] is None:
      out[k] = nxt if nxt is not None else last
    nxt = out[k]
  return out


# ---------------------------------------------------------------------------
# Features.


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
