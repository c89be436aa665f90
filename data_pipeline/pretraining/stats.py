"""Counters of a `create_pretraining_data` run, their summary and JSON."""

import dataclasses
import json
from typing import Dict, List

from albert_common import file_io


@dataclasses.dataclass
class PretrainingStats:
  """Counts that add up over pieces and shards.

  Attributes:
    documents: non-empty documents read.
    sentences: non-empty (after tokenization) sentences read.
    corpus_tokens: tokens in those sentences.
    instances: instances written (all dupes).
    tokens: tokens in instances, [CLS]/[SEP] included, padding excluded.
    masked_tokens: masked positions.
    swapped: instances with next_sentence_labels = 1.
    ngram_draws: n drawn at each visited mask candidate, index = n (the
      sampling distribution "before merging": 6/11, 3/11, 2/11 for ngram 3).
    span_words: masked spans by length in words, index = words (0 unused),
      after shortening to fit the budget.
    replacements: masked tokens replaced by [MASK], kept, replaced by a
      random token.
    dropped_chunks: one-token, one-sentence chunks dropped (see
      sop_instances).
    skipped_lines: input lines skipped as not UTF-8.
    pieces: input pieces processed.
    bad_records: records skipped by --skip_bad_records.
    short_documents: documents dropped by --min_document_sentences.
    duplicate_documents: documents dropped by --dedup_documents.
  """
  documents: int = 0
  sentences: int = 0
  corpus_tokens: int = 0
  instances: int = 0
  tokens: int = 0
  masked_tokens: int = 0
  swapped: int = 0
  ngram_draws: List[int] = dataclasses.field(default_factory=list)
  span_words: List[int] = dataclasses.field(default_factory=list)
  replacements: List[int] = dataclasses.field(
      default_factory=lambda: [0, 0, 0])
  dropped_chunks: int = 0
  skipped_lines: int = 0
  pieces: int = 0
  bad_records: int = 0
  short_documents: int = 0
  duplicate_documents: int = 0

  def add(self, other: "PretrainingStats") -> None:
    for field in dataclasses.fields(self):
      mine, theirs = getattr(self, field.name), getattr(other, field.name)
      if isinstance(mine, list):
        size = max(len(mine), len(theirs))
        mine.extend([0] * (size - len(mine)))
        for i, value in enumerate(theirs):
          mine[i] += value
      else:
        setattr(self, field.name, mine + theirs)

  def to_dict(self) -> Dict:
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, values: Dict) -> "PretrainingStats":
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})

  def derived(self) -> Dict[str, object]:
    """Ratios: masked fraction, SOP balance, span and replacement shares."""
    spans = sum(self.span_words)
    draws = sum(self.ngram_draws)
    masked = sum(self.replacements)
    return {
        "masked_fraction": self.masked_tokens / max(self.tokens, 1),
        "swapped_fraction": self.swapped / max(self.instances, 1),
        "mean_instance_tokens": self.tokens / max(self.instances, 1),
        "span_word_fractions": [w / max(spans, 1) for w in self.span_words],
        "ngram_draw_fractions": [w / max(draws, 1) for w in self.ngram_draws],
        "replacement_fractions": {
            name: count / max(masked, 1) for name, count in zip(
                ("mask", "keep", "random"), self.replacements)},
    }

  def summary(self) -> str:
    """Human-readable lines for the end of a run."""
    d = self.derived()
    spans = " ".join(f"{n}:{f:.3f}" for n, f in
                     enumerate(d["span_word_fractions"]) if n)
    draws = " ".join(f"{n}:{f:.3f}" for n, f in
                     enumerate(d["ngram_draw_fractions"]) if n)
    repl = " ".join(f"{k}:{v:.3f}"
                    for k, v in d["replacement_fractions"].items())
    return "\n".join([
        f"documents {self.documents:,}  sentences {self.sentences:,}  "
        f"corpus tokens {self.corpus_tokens:,}",
        f"instances {self.instances:,}  tokens {self.tokens:,} "
        f"(mean {d['mean_instance_tokens']:.1f})",
        f"masked tokens {self.masked_tokens:,} "
        f"({d['masked_fraction']:.4f} of tokens); replaced {repl}",
        f"masked spans by words {spans}  (n drawn {draws})",
        f"SOP swapped (label 1) {d['swapped_fraction']:.4f}",
        f"dropped one-token chunks {self.dropped_chunks:,}  skipped non-UTF-8 "
        f"lines {self.skipped_lines:,}",
    ] + ([f"skipped bad records {self.bad_records:,}  dropped short "
          f"documents {self.short_documents:,}  dropped duplicate "
          f"documents {self.duplicate_documents:,}"]
         if self.bad_records or self.short_documents or
         self.duplicate_documents else []))


def write_json(path: str, payload: Dict, fs=None) -> None:
  """Writes `payload` as JSON under a temporary name, then renames it.

  `fs`: the filesystem functions (default file_io; see corpus_pieces).
  """
  (fs or file_io).write_atomic(
      path, json.dumps(payload, indent=2, sort_keys=True) + "\n")
