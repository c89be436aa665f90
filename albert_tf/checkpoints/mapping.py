"""Strict moves between canonical arrays and another layout's names.

`map_to_ours` applies a name table (name_tables) to the arrays a reader
found and fails loudly: every unmatched name, missing variable and shape
mismatch together, in one `misfit_error`. A pretraining head is either
complete or absent; an absent head is left out, a partial one is an error.
So is the pooler (transformers' task classes without one).
`map_from_ours` is the way back, for the writers.
"""

from typing import Dict, Sequence

import numpy as np

from albert_common.errors import UserInputError
from albert_tf.checkpoints import name_tables


def misfit_error(source: str, layout: str, unmatched: Sequence[str] = (),
                 missing: Sequence[str] = (), mismatched: Sequence[str] = (),
                 extra: Sequence[str] = ()) -> UserInputError:
  """The error for a checkpoint that does not fit the model.

  One line for the error, then one line per item (tools print it after
  "error: ").
  """
  lines = [f"checkpoint {source} ({layout} layout) does not fit the model:"]
  for items, what in ((unmatched, "checkpoint variable(s) match no model "
                                  "variable"),
                      (missing, "model variable(s) missing from the "
                                "checkpoint"),
                      (mismatched, "shape mismatch(es)")):
    if items:
      lines.append(f"  {len(items)} {what}:")
      lines.extend(f"    {item}" for item in items)
  lines.extend("  " + line for line in extra)
  lines.append("  (check --albert_config_file: vocab_size, hidden_size, "
               "num_hidden_groups, inner_group_num, ...)")
  return UserInputError("\n".join(lines))


def map_to_ours(source: Dict[str, np.ndarray], table, shapes, *,
                source_name: str, layout: str) -> Dict[str, np.ndarray]:
  """Source arrays (their names) -> canonical arrays, or one error for all.

  Args:
    source: their name -> array, optimizer state already removed.
    table: list of name_tables.Entry.
    shapes: canonical name -> our shape (name_tables.our_shapes).
    source_name, layout: for the error message.

  Returns:
    canonical name -> float32 array in our layout.
  """
  by_theirs = {e.theirs: e for e in table}
  unmatched = sorted(n for n in source if n not in by_theirs)
  mismatched, out = [], {}
  for name in sorted(source):
    entry = by_theirs.get(name)
    if entry is None:
      continue
    ours_shape = tuple(shapes[entry.ours])
    want = tuple(entry.transform.source_shape(ours_shape))
    got = tuple(source[name].shape)
    if got != want:
      mismatched.append(f"{name} is {list(got)}, the model needs {list(want)}")
      continue
    out[entry.ours] = np.asarray(
        entry.transform.to_ours(np.asarray(source[name]), ours_shape),
        dtype=np.float32)
  present = {e.ours for e in table if e.theirs in source}
  missing = []
  for entry in table:
    if entry.ours in present:
      continue
    head = _group_of(entry.ours)
    # A head absent as a whole is allowed; a partial head is not.
    if head and not any(_group_of(n) == head for n in present):
      continue
    missing.append(entry.theirs)
  if unmatched or missing or mismatched:
    raise misfit_error(source_name, layout, unmatched, missing, mismatched)
  return out


def _group_of(name: str):
  """The head or "pooler" a canonical name belongs to, else None."""
  return "pooler" if name.startswith("pooler/") else name_tables.head_of(name)


def map_from_ours(arrays: Dict[str, np.ndarray],
                  table) -> Dict[str, np.ndarray]:
  """Canonical arrays -> their names, for every entry present in `arrays`."""
  by_ours = {e.ours: e for e in table}
  unknown = sorted(n for n in arrays if n not in by_ours)
  if unknown:
    raise UserInputError(f"no place in the target layout for: {unknown}")
  return {by_ours[n].theirs: np.ascontiguousarray(
      by_ours[n].transform.from_ours(np.asarray(a)), dtype=np.float32)
          for n, a in arrays.items()}
