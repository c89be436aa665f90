"""Tags -> entities in-graph: seqeval's chunking as table lookups.

`EntityDecoder` reads the entities of a batch of word tag sequences as
data_pipeline.tasks.ner.entity_spans does in Python, from the tables of
`entity_spans.decoding_tables`:

  IOB2 / IOB1 (conlleval's chunks): an entity starts at word i when
    starts[tag[i-1], tag[i]] and ends at word i when ends[tag[i], tag[i+1]]
    ("O" before the first and after the last word). seqeval's starts and
    ends alternate, so the k-th start of a sentence pairs with its k-th end.
  IOBES (strict): words are joined into runs where links[tag[i-1], tag[i]]
    (B-X or I-X followed by I-X or E-X); a run is an entity when it goes
    from a B-X to an E-X, or is a lone S-X.
"""

from typing import Dict

import numpy as np
import tensorflow as tf


class EntityDecoder(tf.Module):
  """The entities of word tag sequences.

  Args:
    tables: entity_spans.decoding_tables(labels, scheme).

  Call: tags int32 [batch, words], padded with len(labels) ("O") -> rows,
  firsts, lasts, types: int32 [entities] (the entity's sentence, its first
  and last word, its type's index), in sentence and word order.
  """

  def __init__(self, tables: Dict[str, np.ndarray]):
    super().__init__(name="entity_decoder")
    self.strict = "links" in tables
    self.tables = {k: tf.constant(v) for k, v in tables.items()}
    self.outside = int(len(tables["type_id"]) - 1)

  def __call__(self, tags):
    batch, width = tf.shape(tags)[0], tf.shape(tags)[1]
    pad = tf.fill([batch, 1], self.outside)
    previous = tf.concat([pad, tags[:, :-1]], axis=1)  # [B, W]
    following = tf.concat([tags[:, 1:], pad], axis=1)

    def pairs(table, a, b):
      return tf.gather_nd(table, tf.stack([a, b], axis=-1))

    if self.strict:
      first, last = self._strict_runs(pairs(self.tables["links"], previous,
                                            tags), tags, width)
    else:
      first = tf.where(pairs(self.tables["starts"], previous, tags))
      last = tf.where(pairs(self.tables["ends"], tags, following))
      first, last = tf.cast(first, tf.int32), tf.cast(last, tf.int32)
    types = tf.gather(self.tables["type_id"], tf.gather_nd(tags, first))
    return first[:, 0], first[:, 1], last[:, 1], types

  def _strict_runs(self, links, tags, width):
    """([E, 2], [E, 2]) (row, word) of the first and last words of the
    well-formed IOBES entities."""
    flat_tags = tf.reshape(tags, [-1])
    new_run = tf.reshape(~links, [-1])  # a row's word 0 never links
    run = tf.cumsum(tf.cast(new_run, tf.int32)) - 1  # [B*W]
    runs = tf.reduce_sum(tf.cast(new_run, tf.int32))
    position = tf.range(tf.size(flat_tags))
    first = tf.math.unsorted_segment_min(position, run, runs)  # [runs]
    last = tf.math.unsorted_segment_max(position, run, runs)

    def is_(name, at):
      return tf.gather(self.tables[name], tf.gather(flat_tags, at))

    valid = ((is_("begins", first) & is_("closes", last) & (last > first)) |
             (is_("singles", first) & tf.equal(first, last)))
    first = tf.boolean_mask(first, valid)
    last = tf.boolean_mask(last, valid)

    def row_word(position):
      return tf.stack([position // width, position % width], axis=-1)
    return row_word(first), row_word(last)
