"""The figures block: the one form in which a harness hands a first-table
row to benchmarks.summary, and the check that a block is in that form.

A block is an HTML comment holding one JSON object (invisible on the page):

  <!-- figures
  {"job": ..., "order": 40, "ours": {...}, ..., "digest": "3f0c..."}
  -->

`block(row)` writes it with a digest: the sha256 (hex prefix) of the
canonical JSON of every other field, so a figure changed by hand no longer
matches and `check` refuses it. Fields (FIELDS below):

  job               the row's name in the first table
  order             its place (data 10, pretraining 20, fine-tuning 30,
                    serving 40, memory 50, early exit 60)
  ours, peer, ceiling  {"value": number, "unit": str, "label": str}
  contender         "peer" (another implementation) or "baseline" (ours
                    without the feature)
  reached           ours in the ceiling's unit
  higher_is_better  true for rates, false for times and memory
  machine           common.machine_label(), e.g. "2-core Intel Xeon (AMX)"
  date              YYYY-MM-DD of the run
  command           `python -m benchmarks.<harness> ...` that wrote it
                    (after the environment settings it needs, if any)
  conditions        "quiet: 18 of 20 rounds", ... (never "loaded")
  chart             optional: {"name", "kind": "bars" | "lines", "title",
                    "unit", "series", "ceiling"}: benchmarks.charts draws it
  peer_run          optional: the peer's own run (machine, date) when the
                    peer was not measured in this run
"""

import datetime
import hashlib
import json
import re
import shlex
from typing import Dict, List, Tuple

START = "<!-- figures"
END = "-->"
DIGEST_CHARS = 16

_PART = {"value": (int, float), "unit": str, "label": str}
FIELDS = {
    "job": str, "order": int, "ours": _PART, "peer": _PART,
    "contender": str, "ceiling": _PART, "reached": (int, float),
    "higher_is_better": bool, "machine": str, "date": str, "command": str,
    "conditions": str,
}
OPTIONAL = {"chart": dict, "peer_run": str, "digest": str}
CONTENDERS = ("peer", "baseline")
# common.machine_label(): "<cores>-core <family>[ (<Tag>)]", the tag a CPU
# feature or generation such as "AMX" or "Zen 4".
MACHINE = re.compile(
    r"[1-9][0-9]*-core [A-Za-z0-9][A-Za-z0-9 .-]*?( \([A-Z][A-Za-z0-9 .-]*\))?")
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class FiguresError(ValueError):
  """A figures block that is not in the form its harness writes, or that
  cannot be a current figure."""


def digest(row: Dict) -> str:
  """The checksum of every field but "digest" (canonical JSON: sorted keys,
  no spaces), as DIGEST_CHARS hex digits."""
  fields = {k: v for k, v in row.items() if k != "digest"}
  text = json.dumps(fields, sort_keys=True, separators=(",", ":"),
                    ensure_ascii=False)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def block(row: Dict) -> str:
  """The block a harness writes for `row`, its digest added (replaced)."""
  signed = {k: v for k, v in row.items() if k != "digest"}
  signed["digest"] = digest(signed)
  return f"{START}\n{json.dumps(signed, ensure_ascii=False)}\n{END}"


def read(text: str) -> List[Tuple[str, str, Dict]]:
  """(stage heading, section heading, row) of every block of a markdown
  text, in order; a block that is not one JSON object is refused."""
  found, stage, section = [], "", ""
  lines = text.splitlines()
  i = 0
  while i < len(lines):
    line = lines[i]
    if line.startswith("## "):
      stage, section = line[3:].strip(), ""
    elif line.startswith("### "):
      section = line[4:].strip()
    elif line.strip() == START:
      try:
        end = lines.index(END, i)
        row = json.loads("\n".join(lines[i + 1:end]))
      except ValueError as e:  # no end, or not JSON
        raise FiguresError(f"section {section!r}: figures block: {e}") from None
      if not isinstance(row, dict):
        raise FiguresError(f"section {section!r}: figures block: not a JSON "
                           "object")
      found.append((stage, section, row))
      i = end
    i += 1
  return found


def check(row: Dict, section: str, harnesses,
          allow_undigested: bool = False) -> None:
  """Raises FiguresError (naming the section and the field) unless `row`
  is in the form figures.block writes: the fields and their types, the
  machine label's form, a real date, a command of one of `harnesses` (module
  names) and a digest that matches. allow_undigested: a row with no digest
  passes (a block written before digests; never for a current table)."""

  def refuse(field, why):
    raise FiguresError(f"section {section!r}: field {field!r}: {why}")

  for field in sorted(set(row) - set(FIELDS) - set(OPTIONAL)):
    refuse(field, "not a field of a figures block")
  for field, kind in list(FIELDS.items()) + list(OPTIONAL.items()):
    if field not in row:
      if field in FIELDS or (field == "digest" and not allow_undigested):
        refuse(field, "missing")
      continue
    if isinstance(kind, dict):
      _check_part(row[field], field, refuse)
    elif not _is(row[field], kind):
      refuse(field, f"{row[field]!r} is not {_kind_name(kind)}")
  if row["contender"] not in CONTENDERS:
    refuse("contender", f"{row['contender']!r} is not one of {CONTENDERS}")
  if not MACHINE.fullmatch(row["machine"]):
    refuse("machine", f"{row['machine']!r} is not of common.machine_label()'s"
           " form ('2-core Intel Xeon (AMX)')")
  if not DATE.fullmatch(row["date"]) or not _is_date(row["date"]):
    refuse("date", f"{row['date']!r} is not a date YYYY-MM-DD")
  if "peer_run" in row and "same run" in row["peer"]["label"]:
    refuse("peer.label", "says 'same run' of a peer measured in its own run "
           "(peer_run)")
  module = command_module(row["command"])
  if module not in harnesses:
    refuse("command", f"{row['command']!r} is not `python -m "
           "benchmarks.<harness> ...` of a harness of the first table")
  if "digest" in row and row["digest"] != digest(row):
    refuse("digest", f"{row['digest']!r} does not match the fields (edited "
           "by hand?): rerun the row's command")


def command_module(command: str) -> str:
  """"benchmarks.x.y" of "python -m benchmarks.x.y ...", after any
  environment settings ("ALBERT_OFFICIAL_DIR=/x python -m ..."); ""
  otherwise."""
  try:
    words = shlex.split(command)
  except ValueError:
    return ""
  while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
    words = words[1:]
  if len(words) >= 3 and words[:2] == ["python", "-m"] and re.fullmatch(
      r"benchmarks(\.\w+)+", words[2]):
    return words[2]
  return ""


def _check_part(part, field, refuse):
  if not isinstance(part, dict) or set(part) != set(_PART):
    refuse(field, f"{part!r} is not {{'value', 'unit', 'label'}}")
  for key, kind in _PART.items():
    if not _is(part[key], kind):
      refuse(f"{field}.{key}", f"{part[key]!r} is not {_kind_name(kind)}")


def _is(value, kind) -> bool:
  """isinstance, with a bool neither an int nor a float."""
  if isinstance(value, bool):
    return kind is bool
  return isinstance(value, kind)


def _kind_name(kind) -> str:
  kinds = kind if isinstance(kind, tuple) else (kind,)
  return " or ".join({"str": "a string", "int": "an integer", "float":
                      "a number", "bool": "true or false", "dict":
                      "an object"}[k.__name__] for k in kinds)


def _is_date(text: str) -> bool:
  try:
    datetime.date.fromisoformat(text)
  except ValueError:
    return False
  return True
