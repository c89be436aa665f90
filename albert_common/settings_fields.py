"""Settings fields that carry their own help, for flags generated from them.

A run's settings are nested frozen dataclasses (as Model Garden's
`ExperimentConfig`): a shared `RuntimeParams` plus each tool's task params.
Every leaf field is declared once with `setting(...)`: its name is the flag's
name, its default the flag's default, its help the flag's help.
`tools.support.settings_flags` defines the absl flags from these fields and
builds the settings from the parsed values; the library never sees `FLAGS`.

  @dataclasses.dataclass(frozen=True)
  class RuntimeParams:
    seed: Optional[int] = setting(None, "Seed for initialisation.")

  @dataclasses.dataclass(frozen=True)
  class RunParams:
    runtime: RuntimeParams
    learning_rate: float = setting(5e-5, "Peak learning rate.")

  leaf_names(RunParams)  # ("seed", "learning_rate")
  from_flat(RunParams, {"seed": 1, "learning_rate": 1e-4})
"""

import dataclasses
import types
import typing
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from albert_common.errors import UserInputError

_REQUIRED = dataclasses.MISSING


def setting(default: Any = _REQUIRED, help: str = "", *,  # noqa: A002
            choices: Optional[Sequence[str]] = None,
            recipe: bool = False) -> Any:
  """A dataclass field with the metadata its flag is generated from.

  Args:
    default: the default; leave it out for a required setting.
    help: the flag's help text.
    choices: the values an enum flag accepts.
    recipe: the default comes from the task's recipe (its flag defaults to
      None, "the task's value").
  """
  return dataclasses.field(
      default=default,
      metadata={"help": help, "choices": tuple(choices or ()),
                "recipe": recipe})


@dataclasses.dataclass(frozen=True)
class LeafField:
  """One flag's worth of a settings class: a leaf field and where it sits.

  Attributes:
    name: the field's (and flag's) name.
    path: the names of the nested fields that lead to it.
    type: its Python type, Optional unwrapped (bool, int, float or str; tuple
      for Tuple[str, ...], a comma-separated list).
    default: its default (dataclasses.MISSING when required).
    help, choices, recipe: see `setting`.
  """

  name: str
  path: Tuple[str, ...]
  type: type
  default: Any
  help: str
  choices: Tuple[str, ...]
  recipe: bool

  @property
  def required(self) -> bool:
    return self.default is _REQUIRED


def _is_settings_class(kind) -> bool:
  return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _scalar_type(kind) -> type:
  """bool, int, float or str, Optional[...] unwrapped; tuple for a
  Tuple[str, ...] (a comma-separated list flag)."""
  if typing.get_origin(kind) in (typing.Union, types.UnionType):
    kind = next(a for a in typing.get_args(kind) if a is not type(None))
  if typing.get_origin(kind) is tuple:
    return tuple
  return kind


def leaf_fields(cls, path: Tuple[str, ...] = ()) -> Iterator[LeafField]:
  """The leaf fields of a settings class, nested ones first-to-last."""
  hints = typing.get_type_hints(cls)
  for field in dataclasses.fields(cls):
    kind = hints[field.name]
    if _is_settings_class(kind):
      yield from leaf_fields(kind, path + (field.name,))
      continue
    yield LeafField(field.name, path + (field.name,), _scalar_type(kind),
                    field.default, field.metadata.get("help", ""),
                    field.metadata.get("choices", ()),
                    field.metadata.get("recipe", False))


def leaf_names(cls) -> Tuple[str, ...]:
  """The flag names of a settings class; each appears once."""
  names = tuple(field.name for field in leaf_fields(cls))
  repeated = sorted({n for n in names if names.count(n) > 1})
  if repeated:
    raise TypeError(f"{cls.__name__}: fields {repeated} appear twice")
  return names


def from_flat(cls, values: Mapping[str, Any]):
  """The settings object of `cls` from flat leaf values (missing ones take
  their defaults; nested settings are built the same way).

  Raises:
    TypeError: a value names no leaf field, or a required one is missing.
  """
  unknown = set(values) - set(leaf_names(cls))
  if unknown:
    raise TypeError(f"{cls.__name__} has no settings {sorted(unknown)}")
  return _build(cls, values)


def _build(cls, values: Mapping[str, Any]):
  hints = typing.get_type_hints(cls)
  kwargs: Dict[str, Any] = {}
  for field in dataclasses.fields(cls):
    kind = hints[field.name]
    if _is_settings_class(kind):
      kwargs[field.name] = _build(kind, values)
    elif field.name in values:
      kwargs[field.name] = values[field.name]
  return cls(**kwargs)


def to_flat(settings) -> Dict[str, Any]:
  """Leaf name -> value of a settings object (the inverse of from_flat)."""
  flat = {}
  for field in dataclasses.fields(settings):
    value = getattr(settings, field.name)
    if dataclasses.is_dataclass(value):
      flat.update(to_flat(value))
    else:
      flat[field.name] = value
  return flat


def replace(settings, **changes):
  """`dataclasses.replace` by leaf name, reaching into nested settings."""
  return from_flat(type(settings), {**to_flat(settings), **changes})


def check_positive(settings, names: Sequence[str]) -> None:
  """UserInputError naming the first of `names` (fields of `settings`, each
  the flag of its name) whose value is not positive."""
  for name in names:
    value = getattr(settings, name)
    if value <= 0:
      raise UserInputError(f"--{name} must be positive, got {value}")


class FlatConstructible:
  """Mixin: `Cls.from_flat(**leaf_values)` builds nested settings."""

  @classmethod
  def from_flat(cls, **values):
    return from_flat(cls, values)
