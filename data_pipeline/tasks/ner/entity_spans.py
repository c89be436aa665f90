"""Predicted word tags -> entities with character offsets into the text.

The rules the raw-text export applies in-graph
(albert_tf.exports.serving.ner_decoding), in Python: the entities are
seqeval's reading of the tags (tag_schemes.entities: conlleval's chunks for
IOB2 / IOB1, well-formed chunks only for IOBES), an entity runs from its
first word's first character to its last word's end, and its score is the
mean over its words of the probability of their predicted tag.

`decoding_tables` turns seqeval's rules into the lookup tables the graph
reads, so both read the same entities out of the same tags.
"""

from typing import Dict, List, Sequence

import numpy as np

from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner.word_splitting import Word


def spans(text: str, words: Sequence[Word], tags: Sequence[str],
          scores: Sequence[float], scheme: str) -> List[Dict]:
  """The entities of one text.

  Args:
    text: the text.
    words: its words (word_splitting.split_words).
    tags: the predicted tag of each word.
    scores: the probability of each word's predicted tag.
    scheme: the tag scheme.

  Returns:
    [{"label", "start", "end", "text", "score"}] in order:
    text[start:end] == the entity's text (Unicode characters).
  """
  out = []
  for kind, first, last in tag_schemes.entities(tags, scheme):
    start, end = words[first].start, words[last].end
    out.append(dict(label=kind, start=start, end=end, text=text[start:end],
                    score=float(np.mean(scores[first:last + 1]))))
  return out


def entity_types(labels: Sequence[str]) -> List[str]:
  """The sorted entity types of a label list ("B-PER" -> "PER")."""
  return sorted({tag_schemes.split_tag(t)[1] for t in labels
                 if t != tag_schemes.OUTSIDE})


def decoding_tables(labels: Sequence[str], scheme: str
                   ) -> Dict[str, np.ndarray]:
  """Lookup tables of seqeval's chunking over label ids, for the graph.

  Index len(labels) stands for "O" before the first and after the last
  word (padding).

  Returns:
    type_id: int32 [L + 1], the index of the label's type in
      entity_types(labels), -1 for O.
    IOB2 / IOB1 (conlleval's chunking): starts, ends: bool [L + 1, L + 1]:
      starts[a, b] when a chunk starts at a word tagged b after one tagged
      a; ends[a, b] when a chunk ends at a word tagged a before one tagged
      b (seqeval's start_of_chunk / end_of_chunk).
    IOBES (strict): links: bool [L + 1, L + 1], b continues the entity of
      a (B-X or I-X, then I-X or E-X); begins, closes, singles: bool
      [L + 1], B-X, E-X and S-X labels.
  """
  from seqeval.metrics.sequence_labeling import end_of_chunk
  from seqeval.metrics.sequence_labeling import start_of_chunk
  parts = [tag_schemes.split_tag(t) for t in labels] + [("O", "")]
  types = entity_types(labels)
  type_id = np.array([types.index(k) if p != "O" else -1 for p, k in parts],
                     np.int32)
  n = len(parts)
  tables = dict(type_id=type_id)
  if scheme == tag_schemes.IOBES:
    tables["links"] = np.array(
        [[a[0] in "BI" and b[0] in "IE" and a[1] == b[1] for b in parts]
         for a in parts], bool)
    for name, prefix in (("begins", "B"), ("closes", "E"), ("singles", "S")):
      tables[name] = np.array([p == prefix for p, _ in parts], bool)
    return tables
  # seqeval reads "O" as type "_".
  seqeval_parts = [(p, k or "_") for p, k in parts]
  tables["starts"] = np.array(
      [[start_of_chunk(a[0], b[0], a[1], b[1]) for b in seqeval_parts]
       for a in seqeval_parts], bool).reshape(n, n)
  tables["ends"] = np.array(
      [[end_of_chunk(a[0], b[0], a[1], b[1]) for b in seqeval_parts]
       for a in seqeval_parts], bool).reshape(n, n)
  return tables
