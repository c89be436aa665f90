"""Every tool's flags in one process: a script, a notebook or a test that
imports two tools (export_tflite and run_squad both have --doc_stride,
run_pretraining and run_classifier --learning_rate) gets each tool's own
defaults and choices, in either import order."""

import dataclasses
import importlib
import pathlib

from absl import flags
import pytest

from albert_common import settings_fields
from albert_common.errors import UserInputError
from tools.support import settings_flags

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOLS = sorted(p.stem for p in (ROOT / "tools").glob("*.py")
               if p.stem != "__init__")
# A value of each flag type for a required setting.
_SAMPLE = {str: "x", int: "1", float: "1.0", bool: "true", tuple: "x"}


@pytest.fixture(scope="module")
def tool_settings():
  """tool -> the settings classes it defines flags from, with every tool
  (re)loaded into the one FLAGS of this process, first in name order then
  in reverse (so each pair of tools meets in both orders)."""
  defined = {}
  original = settings_flags.define_flags

  def recording(settings_class, module, flag_values=flags.FLAGS):
    defined.setdefault(module.rsplit(".", 1)[-1], []).append(settings_class)
    return original(settings_class, module, flag_values)

  settings_flags.define_flags = recording
  try:
    for tool in TOOLS + TOOLS[::-1]:
      importlib.reload(importlib.import_module(f"tools.{tool}"))
  finally:
    settings_flags.define_flags = original
  return defined


def _read_unset(settings_class, *args):
  """The settings read back with `args` and the required flags given."""
  required = [f"--{f.name}={_SAMPLE[f.type]}"
              for f in settings_fields.leaf_fields(settings_class)
              if f.required]
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS(["tool", *required, *args])
    return settings_flags.read_settings(settings_class)[0]
  finally:
    flags.FLAGS.unparse_flags()


def test_every_tool_loads_beside_every_other(tool_settings):
  assert set(tool_settings) == set(TOOLS)
  shared = {}
  for tool, classes in tool_settings.items():
    for settings_class in classes:
      for field in settings_fields.leaf_fields(settings_class):
        shared.setdefault(field.name, set()).add(
            repr(field.default) if not field.required else "required")
  # The clashes this process survives: names with defaults of their own.
  differing = {name for name, defaults in shared.items()
               if len(defaults) > 1}
  assert {"doc_stride", "learning_rate", "train_batch_size",
          "input_format", "output_dir", "num_threads"} <= differing


def test_each_tool_reads_its_own_defaults(tool_settings):
  for tool, classes in tool_settings.items():
    for settings_class in classes:
      read = settings_fields.to_flat(_read_unset(settings_class))
      for field in settings_fields.leaf_fields(settings_class):
        if not field.required:
          assert read[field.name] == field.default, (tool, field.name)


def test_each_tool_takes_its_own_choices_only(tool_settings):
  classes = {tool: dict((c.__name__, c) for c in found)
             for tool, found in tool_settings.items()}
  checkpoints = classes["convert_checkpoint"]["ConversionParams"]
  corpus = classes["create_pretraining_data"]["DataCreationParams"]
  given = "--input_format=keras_hub"
  assert _read_unset(checkpoints, given).input_format == "keras_hub"
  with pytest.raises(UserInputError, match=r"^--input_format=keras_hub "
                     "must be one of text, jsonl, parquet$"):
    _read_unset(corpus, given)
  demo = classes["demo"]["DemoFlags"]
  assert dataclasses.asdict(_read_unset(demo))["output_dir"] == "demo_output"
