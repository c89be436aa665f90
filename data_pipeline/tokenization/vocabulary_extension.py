"""A tokenizer's vocabulary extended with a domain's pieces, old ids unchanged.

1. Learn: a tokenizer of the old one's kind is trained on the domain
   sentences (SentencePiece with the old model's normalizer, model type,
   coverage and symbols; WordPiece with the same learner as
   `wordpiece_trainer`). Its pieces that the old vocabulary lacks are the
   candidates.
2. Characters first (`required_characters`, one rule for both kinds): as
   SentencePiece's trainer guarantees `character_coverage` before it
   learns any longer piece, every character of the domain text that the
   old vocabulary cannot spell gets its pieces, most frequent first, up to
   the coverage of the domain text (SentencePiece: the old model's
   `character_coverage`; a vocab.txt records none, so WordPiece uses
   SentencePiece's default, 0.9995). SentencePiece
   (`character_candidates`): a character it encodes to `<unk>` becomes a
   single-character piece. WordPiece (`wordpiece_character_candidates`):
   a character whose word-start piece "c" or continuation "##c" the
   vocabulary lacks (a word holding it is [UNK] whole) gets the missing
   ones, as `wordpiece_trainer` lists every character in both forms; but
   no "##c" for a CJK ideograph or punctuation, which the basic tokenizer
   always makes a word of its own. Without this a new script stays
   unknown outside the whole words the ranking prefers.
3. Rank (`rank`) the rest: by `saving`, the pieces the domain corpus loses
   when the candidate joins the old vocabulary, estimated one candidate at a
   time: frequency x (old pieces to spell it - 1 + characters the old vocabulary
   reads as unknown). The frequency is the candidate's count in the domain
   corpus tokenized by the domain tokenizer; the spelling is the old
   tokenizer's on the piece's text. An unknown character counts as a piece
   lost: an old `<unk>` covers a run of them with no information, which the
   piece restores. The simpler ranking, `model_order`, is the domain
   tokenizer's own (unigram score; WordPiece: the learner's count order).
4. Append: old pieces keep their ids and scores; the new ones follow, in
   rank order. SentencePiece (unigram only) is edited through the protobuf
   module the sentencepiece package ships; each new piece is NORMAL with
   score max(its spelling's log-probability + 1, its domain score shifted
   to the old model's scale by the difference of the two models' median
   scores). A unigram model keeps a piece where its log-probability beats
   the sum of those of any other segmentation of the same text, so the
   first term makes the piece win over its own old spelling (an unknown
   character costing the old model's lowest score - 10, as SentencePiece
   scores it), the second keeps the domain's relative frequencies.
   WordPiece: the new lines are appended to vocab.txt ("##" continuation
   pieces as WordPiece spells them).

Imports no TensorFlow.
"""

import collections
import dataclasses
import io
import statistics
from typing import Callable, Dict, List, Sequence, Tuple

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_tokenizer as spt
from data_pipeline.tokenization import wordpiece_tokenizer as wpt
from data_pipeline.tokenization import wordpiece_trainer

RANKINGS = ("saving", "model_order")
# SentencePiece scores an unknown character as the lowest piece score minus
# this (kUnkPenalty in unigram_model.cc).
UNKNOWN_PENALTY = 10.0
SCORE_MARGIN = 1.0
# A vocab.txt records no character coverage: SentencePiece's default.
WORDPIECE_CHARACTER_COVERAGE = 0.9995
_NORMAL = sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
_UNIGRAM = sentencepiece_model_pb2.TrainerSpec.UNIGRAM


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A piece of the domain tokenizer that the old vocabulary lacks.

  Attributes:
    piece: str, as the vocabulary holds it ("▁hemato", "##logy").
    frequency: int, its uses in the domain corpus tokenized by the domain
      tokenizer.
    spelling: tuple of int, the old ids the old tokenizer spells its text
      with (an unknown run as the `<unk>` id).
    unknown_chars: int, characters of the text the old tokenizer reads as
      unknown.
    model_rank: int, its place in the domain tokenizer's own order (0
      first); -1 for a character added for coverage (character_candidates).
    domain_score: float, its domain unigram log-probability (WordPiece: 0).
  """
  piece: str
  frequency: int
  spelling: Tuple[int, ...]
  unknown_chars: int
  model_rank: int
  domain_score: float = 0.0

  @property
  def saving(self) -> int:
    """Pieces saved on the domain corpus: freq x (spelling - 1 + unknown)."""
    return self.frequency * (len(self.spelling) - 1 + self.unknown_chars)


def rank(candidates: Sequence[Candidate], ranking: str) -> List[Candidate]:
  """Candidates best first: by `saving` (ties: model order), or by the
  domain tokenizer's `model_order`. Unused candidates (frequency 0) and,
  for `saving`, those that save nothing are dropped."""
  if ranking not in RANKINGS:
    raise UserInputError(f"--ranking={ranking}: not one of "
                         f"{', '.join(RANKINGS)}")
  used = [c for c in candidates if c.frequency > 0]
  if ranking == "model_order":
    return sorted(used, key=lambda c: c.model_rank)
  return sorted((c for c in used if c.saving > 0),
                key=lambda c: (-c.saving, c.model_rank))


# --- SentencePiece --------------------------------------------------------

def read_model_proto(data: bytes, path: str):
  """The ModelProto of a `.model` file's bytes; UserInputError naming
  `path` for a model this tool cannot extend (not unigram)."""
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(data)
  if proto.trainer_spec.model_type != _UNIGRAM:
    kind = sentencepiece_model_pb2.TrainerSpec.ModelType.Name(
        proto.trainer_spec.model_type)
    raise UserInputError(
        f"--spm_model_file={path} is a {kind} model; only unigram models "
        "(ALBERT's) can be extended: new BPE pieces would need merges")
  return proto


def _processor(proto) -> spm.SentencePieceProcessor:
  sp = spm.SentencePieceProcessor()
  sp.LoadFromSerializedProto(proto.SerializeToString())
  return sp


def _speller(proto) -> spm.SentencePieceProcessor:
  """The old model that encodes a piece's own text: no dummy "▁" is added
  and a piece's "▁" is kept, so "logy" is spelled as a word's inside."""
  speller = sentencepiece_model_pb2.ModelProto()
  speller.CopyFrom(proto)
  speller.normalizer_spec.add_dummy_prefix = False
  speller.normalizer_spec.remove_extra_whitespaces = False
  return _processor(speller)


def _train_domain_model(proto, sentences: Sequence[str], vocab_size: int,
                        random_seed: int,
                        split_by_unicode_script: bool = True):
  """A unigram model of the domain with the old model's settings
  (split_by_unicode_script=False: pieces may join letters to punctuation
  and digits)."""
  spec = proto.trainer_spec
  options = dict(
      model_type="unigram", vocab_size=vocab_size,
      character_coverage=spec.character_coverage,
      normalization_rule_name=proto.normalizer_spec.name or "identity",
      add_dummy_prefix=proto.normalizer_spec.add_dummy_prefix,
      control_symbols=list(spec.control_symbols),
      user_defined_symbols=list(spec.user_defined_symbols),
      pad_id=spec.pad_id, unk_id=spec.unk_id, bos_id=spec.bos_id,
      eos_id=spec.eos_id, split_digits=spec.split_digits,
      split_by_unicode_script=split_by_unicode_script,
      input_sentence_size=0, hard_vocab_limit=False, num_threads=4,
      minloglevel=2)
  spm.set_random_generator_seed(random_seed)
  model = io.BytesIO()
  try:
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences),
                                   model_writer=model, **options)
  except RuntimeError as e:
    raise UserInputError(f"SentencePiece cannot learn the domain corpus: "
                         f"{e}") from e
  domain = sentencepiece_model_pb2.ModelProto()
  domain.ParseFromString(model.getvalue())
  return domain


def sentencepiece_candidates(proto, sentences: Sequence[str],
                             vocab_size: int,
                             random_seed: int = 12345,
                             split_by_unicode_script: bool = True
                             ) -> List[Candidate]:
  """Pieces of a domain unigram model that `proto` (the old model) lacks.

  Args:
    proto: the old ModelProto.
    sentences: the domain text, normalised as the old model's tokenizer
      does (`SentencePieceTokenizer.preprocess`).
    vocab_size: the domain model's size (a soft limit on a small corpus).
    random_seed: SentencePiece's seed.
    split_by_unicode_script: the domain model's trainer option (False:
      pieces may cross from letters to punctuation or digits).
  """
  domain = _train_domain_model(proto, sentences, vocab_size, random_seed,
                               split_by_unicode_script)
  old_pieces = {p.piece for p in proto.pieces}
  kept = [(i, p) for i, p in enumerate(domain.pieces)
          if p.type == _NORMAL and p.piece not in old_pieces and
          p.piece != spt.SPIECE_UNDERLINE and not spt.needs_comma_split(
              p.piece)]
  domain_sp = _processor(domain)
  counts = collections.Counter()
  for ids in domain_sp.Encode(list(sentences), out_type=int):
    counts.update(ids)
  order = sorted(kept, key=lambda item: (-item[1].score, item[0]))
  speller = _speller(proto)
  unk = speller.unk_id()
  candidates = []
  for rank_, (i, p) in enumerate(order):
    ids = speller.EncodeAsIds(p.piece)
    surfaces = speller.EncodeAsPieces(p.piece)
    unknown = sum(len(s) for s, j in zip(surfaces, ids) if j == unk)
    candidates.append(Candidate(p.piece, counts[i], tuple(ids), unknown,
                                rank_, p.score))
  return candidates


def spelling_score(proto, candidate: Candidate) -> float:
  """The old model's log-probability of the candidate's spelling."""
  lowest = min(p.score for p in proto.pieces if p.type == _NORMAL)
  unk = proto.trainer_spec.unk_id
  return sum(lowest - UNKNOWN_PENALTY if i == unk else proto.pieces[i].score
             for i in candidate.spelling)


def new_piece_scores(proto, chosen: Sequence[Candidate]) -> List[float]:
  """Scores of the appended pieces (see the module doc): max(spelling's
  log-probability + SCORE_MARGIN, domain score + median shift)."""
  old_median = statistics.median(p.score for p in proto.pieces
                                 if p.type == _NORMAL)
  domain_median = statistics.median(c.domain_score for c in chosen)
  shift = old_median - domain_median
  return [max(spelling_score(proto, c) + SCORE_MARGIN, c.domain_score + shift)
          for c in chosen]


def required_characters(sentences: Sequence[str], coverage: float
                        ) -> List[Tuple[str, int]]:
  """(character, count) of the domain text, most frequent first, that
  SentencePiece's trainer would keep at `character_coverage` = `coverage`:
  characters are taken while the share already covered is below it
  (trainer_interface.cc; whitespace is not counted; 0 counts as 1.0).

  Args:
    sentences: the domain text, normalised as the old tokenizer does.
    coverage: float in (0, 1].
  """
  counts = collections.Counter(c for s in sentences for c in s
                               if not c.isspace())
  total = sum(counts.values())
  coverage = coverage or 1.0
  kept, covered = [], 0
  for char, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    if total and covered / total >= coverage:
      break
    kept.append((char, count))
    covered += count
  return kept


def _characters_first(sentences: Sequence[str], coverage: float,
                      missing: Callable[[str], List[str]], unk_id: int,
                      score: Callable[[str], float] = lambda piece: 0.0
                      ) -> List[Candidate]:
  """Candidates for the pieces `missing(char)` names (those the old
  vocabulary lacks to spell `char`) of each `required_characters` char,
  most frequent first; each with the character's count as frequency,
  spelled as one `<unk>` (one unknown character), model_rank -1."""
  return [Candidate(piece, count, (unk_id,), 1, -1, score(piece))
          for char, count in required_characters(sentences, coverage)
          for piece in missing(char)]


def character_candidates(proto, sentences: Sequence[str],
                         candidates: Sequence[Candidate] = ()
                         ) -> List[Candidate]:
  """Single-character pieces for the characters of `required_characters`
  (at the old model's coverage) that the old model cannot spell (it
  encodes them to `<unk>`), most frequent first.

  Args:
    proto: the old ModelProto.
    sentences: the domain text, normalised as the old tokenizer does.
    candidates: the domain model's candidates (`sentencepiece_candidates`),
      whose unigram score a character takes when it is among them (else
      their lowest).
  """
  speller = _speller(proto)
  unk = speller.unk_id()
  scores = {c.piece: c.domain_score for c in candidates}
  lowest = min(scores.values(), default=0.0)
  return _characters_first(
      sentences, proto.trainer_spec.character_coverage,
      lambda char: [char] if unk in speller.EncodeAsIds(char) else [], unk,
      lambda piece: scores.get(piece, lowest))


def extend_sentencepiece(proto, chosen: Sequence[Candidate],
                         split_by_unicode_script: bool = True) -> bytes:
  """The serialized old model with `chosen` appended (NORMAL pieces); its
  trainer_spec.split_by_unicode_script says how the new pieces were
  learned."""
  extended = sentencepiece_model_pb2.ModelProto()
  extended.CopyFrom(proto)
  extended.trainer_spec.split_by_unicode_script = split_by_unicode_script
  for candidate, score in zip(chosen, new_piece_scores(proto, chosen)):
    piece = extended.pieces.add()
    piece.piece = candidate.piece
    piece.score = score
    piece.type = _NORMAL
  extended.trainer_spec.vocab_size = len(extended.pieces)
  return extended.SerializeToString()


# --- WordPiece -------------------------------------------------------------

def _continuation_ids(tokenizer: wpt.WordPieceTokenizer,
                      text: str) -> List[int]:
  """Greedy longest-match ids of `text` inside a word ("##" pieces only);
  [UNK] if some part has no piece, as WordPiece spells a whole word."""
  ids, start = [], 0
  while start < len(text):
    end = len(text)
    while end > start and (wpt.CONTINUATION + text[start:end]
                           not in tokenizer.vocab):
      end -= 1
    if end == start:
      return [tokenizer.vocab[wpt.UNK_TOKEN]]
    ids.append(tokenizer.vocab[wpt.CONTINUATION + text[start:end]])
    start = end
  return ids


def wordpiece_spelling(tokenizer: wpt.WordPieceTokenizer,
                       piece: str) -> Tuple[List[int], int]:
  """(old ids, unknown characters) of a piece's text under `tokenizer`."""
  if piece.startswith(wpt.CONTINUATION) and len(piece) > len(
      wpt.CONTINUATION):
    text = piece[len(wpt.CONTINUATION):]
    ids = _continuation_ids(tokenizer, text)
  else:
    text = piece
    ids = tokenizer.encode_word(piece)
  unk = tokenizer.vocab[wpt.UNK_TOKEN]
  return ids, len(text) if ids == [unk] else 0


def wordpiece_candidates(tokenizer: wpt.WordPieceTokenizer,
                         lines: Sequence[str],
                         vocab_size: int) -> List[Candidate]:
  """Pieces of a WordPiece vocabulary learned from the domain `lines` (raw
  text) that the old `tokenizer` lacks."""
  domain_tokens = wordpiece_trainer.learn_vocabulary(
      list(lines), vocab_size, tokenizer.do_lower_case,
      max_unique_chars=1000)
  domain = wpt.WordPieceTokenizer(None, tokenizer.do_lower_case,
                                  tokens=domain_tokens)
  counts = collections.Counter()
  for line in lines:
    counts.update(domain.encode(line))
  candidates = []
  for i, piece in enumerate(domain_tokens):
    if piece in tokenizer.vocab or piece in wordpiece_trainer.SPECIAL_TOKENS:
      continue
    ids, unknown = wordpiece_spelling(tokenizer, piece)
    candidates.append(Candidate(piece, counts[i], tuple(ids), unknown,
                                len(candidates)))
  return candidates


def wordpiece_character_candidates(
    tokenizer: wpt.WordPieceTokenizer, lines: Sequence[str],
    coverage: float = WORDPIECE_CHARACTER_COVERAGE) -> List[Candidate]:
  """The pieces the old `tokenizer` lacks to spell each character of
  `required_characters` of the raw `lines` (the characters of their words,
  as the tokenizer cuts and cases them) in every place a word can hold
  it, most frequent first: the word-start piece "c", and the continuation
  "##c" unless the basic tokenizer always makes the character a word of
  its own (a CJK ideograph, punctuation), where "##c" is never looked up.
  A word holding a character without its piece in that place is [UNK]
  whole."""
  def missing(char: str) -> List[str]:
    alone = wpt.is_cjk(char) or wpt.is_punctuation(char)
    pieces = (char,) if alone else (char, wpt.CONTINUATION + char)
    return [p for p in pieces if p not in tokenizer.vocab]

  words = [w for line in lines
           for w in basic_tokenize_lower(tokenizer, line)]
  return _characters_first(words, coverage, missing, tokenizer.unk_id)


# --- Measures -------------------------------------------------------------

def count_pieces(tokenizer, texts: Sequence[str]) -> Dict[str, int]:
  """{"pieces", "words", "unknown_chars", "unknown_pieces"} of raw `texts`
  under a tokenizer (words as BERT's basic tokenization cuts them: at
  whitespace and punctuation, a CJK character each; unknown_chars: the
  characters read as <unk>, since SentencePiece gives one <unk> for a run
  of them; unknown_pieces: the <unk> ids)."""
  pieces = words = unknown = unknown_pieces = 0
  for text in texts:
    basic_words = wpt.basic_tokenize(text, do_lower_case=False)
    words += len(basic_words)
    if isinstance(tokenizer, wpt.WordPieceTokenizer):
      ids = tokenizer.encode(text)
      unknown += sum(len(w) for w in basic_tokenize_lower(tokenizer, text)
                     if tokenizer.encode_word(w) == [tokenizer.unk_id])
    else:
      surfaces = tokenizer.tokenize(text)
      ids = tokenizer.convert_tokens_to_ids(surfaces)
      unknown += sum(len(s) for s, i in zip(surfaces, ids)
                     if i == tokenizer.unk_id)
    pieces += len(ids)
    unknown_pieces += sum(1 for i in ids if i == tokenizer.unk_id)
  return {"pieces": pieces, "words": words, "unknown_chars": unknown,
          "unknown_pieces": unknown_pieces}


def basic_tokenize_lower(tokenizer: wpt.WordPieceTokenizer,
                         text: str) -> List[str]:
  """The words WordPiece looks up in `text` (cased as the tokenizer)."""
  return wpt.basic_tokenize(text, tokenizer.do_lower_case)


class BytesFile:
  """A tokenizer file held in memory, as the `fs` argument of
  `SentencePieceTokenizer`: the extended model is measured before it is
  written."""

  def __init__(self, data: bytes):
    self.data = data

  def isfile(self, path: str) -> bool:
    del path
    return True

  def read_bytes(self, path: str) -> bytes:
    del path
    return self.data
