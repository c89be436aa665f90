"""NER tag schemes: IOB2 (BIO), IOB1 and IOBES, as seqeval reads them.

A tag is "O" or "<prefix>-<type>" ("B-PER", "I-LOC-city": the type is
everything after the first "-"). The prefixes a scheme allows:

  IOB2 (BIO)  B- starts every entity, I- continues it.
  IOB1        I- starts and continues an entity; B- starts one only right
              after an entity of the same type (CoNLL-2003's original files).
  IOBES       B- I-* E- for a longer entity, S- for a single-token one.

Files keep the scheme they are written in: it is detected from the
training tags (`detect_scheme`) or named by the user, and every sequence is
checked against it (`check_sequence`). Entities are read from tags as
seqeval does (`entities`): conlleval's lenient chunking for IOB2 and IOB1,
seqeval's strict mode for IOBES (`seqeval_options`), so the F1 of
data_pipeline.tasks.ner.metrics is seqeval's.
"""

from typing import Iterable, List, Optional, Sequence, Tuple

IOB2, IOB1, IOBES = "IOB2", "IOB1", "IOBES"
SCHEMES = (IOB2, IOB1, IOBES)
# What `--tag_scheme` accepts: auto (detect), a scheme, or a common alias.
AUTO = "auto"
ALIASES = {"BIO": IOB2, "BIOES": IOBES}
CHOICES = (AUTO,) + SCHEMES + tuple(ALIASES)
OUTSIDE = "O"
_PREFIXES = {IOB2: "BI", IOB1: "BI", IOBES: "BIES"}

# (type, first token, last token) of one entity, inclusive.
Entity = Tuple[str, int, int]


def canonical(scheme: str) -> str:
  """A scheme name or alias as one of SCHEMES (AUTO stays AUTO)."""
  name = ALIASES.get(scheme.upper(), scheme.upper())
  if name == AUTO.upper():
    return AUTO
  if name not in SCHEMES:
    raise ValueError(f"tag scheme must be one of {CHOICES}, got {scheme!r}")
  return name


def split_tag(tag: str) -> Optional[Tuple[str, str]]:
  """("O", "") for "O", (prefix, type) for "B-PER"; None when `tag` is
  neither (no "-", an empty prefix or type, a prefix of two letters)."""
  if tag == OUTSIDE:
    return OUTSIDE, ""
  prefix, dash, kind = tag.partition("-")
  if not dash or len(prefix) != 1 or not kind:
    return None
  return prefix, kind


def tag_error(tag: str, scheme: Optional[str]) -> Optional[str]:
  """Why `tag` cannot be a tag of `scheme` (None: it can; scheme None: any
  of the prefixes B I E S)."""
  parts = split_tag(tag)
  allowed = _PREFIXES[scheme] if scheme else "BIES"
  if parts is None or (parts[0] != OUTSIDE and parts[0] not in allowed):
    what = f"an {scheme} tag" if scheme else "a tag"
    return (f"{tag!r} is not {what} (\"O\" or {'/'.join(allowed)}-TYPE, "
            "e.g. B-PER)")
  return None


def detect_scheme(sequences: Iterable[Sequence[str]]) -> str:
  """The scheme of well-formed tag sequences.

  IOBES if any E- or S- tag; else IOB1 if more entities start with I-
  than with B- (a B- or I- after O, at the start, or after another type),
  else IOB2. In a file of one scheme one of the counts is 0; in a mixed one
  the minority are the errors check_sequence then names.
  """
  starts_with_b = starts_with_i = 0
  for tags in sequences:
    previous = (OUTSIDE, "")
    for tag in tags:
      parts = split_tag(tag)
      if parts is None:
        previous = (OUTSIDE, "")
        continue
      if parts[0] in "ES":
        return IOBES
      new_entity = parts[0] != OUTSIDE and (
          previous[0] == OUTSIDE or previous[1] != parts[1])
      starts_with_b += new_entity and parts[0] == "B"
      starts_with_i += new_entity and parts[0] == "I"
      previous = parts
  if starts_with_i > starts_with_b:
    return IOB1
  return IOB2


def check_sequence(tags: Sequence[str],
                   scheme: str) -> Optional[Tuple[int, str]]:
  """The first tag that breaks `scheme`: (its index, why), or None.

  IOB2: an I-X must follow B-X or I-X. IOB1: a B-X must follow B-X or I-X.
  IOBES: B-X and I-X must be followed by I-X or E-X, and I-X and E-X must
  follow B-X or I-X.
  """
  parts = []
  for i, tag in enumerate(tags):
    error = tag_error(tag, scheme)
    if error:
      return i, error
    parts.append(split_tag(tag))
  outside = (OUTSIDE, "")
  for i, (prefix, kind) in enumerate(parts):
    before = parts[i - 1] if i else outside
    after = parts[i + 1] if i + 1 < len(parts) else outside
    inside_before = before[0] in "BI" and before[1] == kind
    if scheme == IOB2 and prefix == "I" and not inside_before:
      return i, (f"{tags[i]} {_after(tags, i)} breaks IOB2 (an entity "
                 f"starts with B-{kind})")
    if scheme == IOB1 and prefix == "B" and not inside_before:
      return i, (f"{tags[i]} {_after(tags, i)} breaks IOB1 (B- only "
                 f"separates two adjacent {kind} entities)")
    if scheme == IOBES:
      if prefix in "IE" and not inside_before:
        return i, (f"{tags[i]} {_after(tags, i)} breaks IOBES (an entity "
                   f"starts with B-{kind} or is S-{kind})")
      if prefix in "BI" and not (after[0] in "IE" and after[1] == kind):
        following = tags[i + 1] if i + 1 < len(tags) else "the end"
        return i, (f"{tags[i]} followed by {following} breaks IOBES (it "
                   f"must end with E-{kind})")
  return None


def _after(tags: Sequence[str], i: int) -> str:
  return f"after {tags[i - 1]}" if i else "at the start"


def entities(tags: Sequence[str], scheme: str) -> List[Entity]:
  """The entities seqeval reads in `tags` (see seqeval_options):
  [(type, first, last)], in order; for IOBES only well-formed ones."""
  if scheme == IOBES:
    from seqeval.scheme import IOBES as SeqevalIOBES
    from seqeval.scheme import Tokens
    return [(e.tag, e.start, e.end - 1)
            for e in Tokens(list(tags), SeqevalIOBES).entities]
  from seqeval.metrics.sequence_labeling import get_entities
  return [tuple(e) for e in get_entities(list(tags))]


def seqeval_options(scheme: str) -> dict:
  """The keyword arguments of seqeval's metrics for `scheme`: strict mode
  for IOBES, conlleval's default mode otherwise."""
  if scheme == IOBES:
    from seqeval.scheme import IOBES as SeqevalIOBES
    return dict(mode="strict", scheme=SeqevalIOBES)
  return {}


def tags_from_spans(length: int, spans: Sequence[Entity],
                    scheme: str) -> List[str]:
  """Tags of `length` tokens holding the (type, first, last) spans
  (non-overlapping, any order), written in `scheme`."""
  tags = [OUTSIDE] * length
  previous_end, previous_kind = -2, None
  for kind, first, last in sorted(spans, key=lambda s: s[1]):
    if scheme == IOBES and first == last:
      tags[first] = f"S-{kind}"
    else:
      adjacent = previous_end == first - 1 and previous_kind == kind
      start = "I" if scheme == IOB1 and not adjacent else "B"
      tags[first] = f"{start}-{kind}"
      for i in range(first + 1, last + 1):
        tags[i] = f"I-{kind}"
      if scheme == IOBES:
        tags[last] = f"E-{kind}"
    previous_end, previous_kind = last, kind
  return tags
