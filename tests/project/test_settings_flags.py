"""Flags generated from the settings dataclasses: one definition per setting,
the settings read back once, the library never touching FLAGS."""

import ast
import dataclasses
import pathlib
from typing import Tuple

from absl import flags
import pytest

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.training import runtime_params
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings
from albert_tf.training.pretraining import params as pretraining_params
from tools.support import settings_flags

ROOT = pathlib.Path(__file__).resolve().parents[2]
FinetuningParams = finetuning_params.FinetuningParams
PretrainingParams = pretraining_params.PretrainingParams


def _flag_values(*classes):
  """A private FlagValues: the global FLAGS holds the tools' flags."""
  values = flags.FlagValues()
  for settings_class in classes:
    settings_flags.define_flags(settings_class, "test_module", values)
  return values


def test_every_field_is_one_flag_with_its_default_and_help():
  values = _flag_values(PretrainingParams)
  fields = list(settings_fields.leaf_fields(PretrainingParams))
  assert {f.name for f in fields} == set(values) - {"help", "helpshort",
                                                    "helpfull", "helpxml"}
  for field in fields:
    flag = values[field.name]
    assert field.help and field.help in flag.help
    assert flag.default == (None if field.required else field.default)
  assert values["strategy"].parser.enum_values == [
      "default", "one_device", "mirrored", "multi_worker", "tpu"]
  # The shared runtime settings are defined once, in RuntimeParams.
  runtime = {f.name for f in dataclasses.fields(runtime_params.RuntimeParams)}
  assert runtime == {"output_dir", "strategy", "tpu", "dtype", "jit_compile",
                     "recompute_layers", "seed",
                     "gradient_accumulation_steps"}
  assert runtime <= {f.name for f in fields}
  assert runtime <= set(settings_fields.leaf_names(FinetuningParams))


def test_recipe_flags_take_the_task_recipe_when_unset():
  values = _flag_values(FinetuningParams)
  settings_flags.define_flags(FinetuningParams, "test_module", values)  # again
  values(["prog", "--output_dir=/tmp/x", "--spm_model_file=sp.model",
          "--learning_rate=0.1", "--do_train"])
  recipe = dict(learning_rate=3e-5, train_step=10000, warmup_step=1000,
                train_batch_size=128)
  params, user_set = settings_flags.read_settings(FinetuningParams, recipe,
                                                  values)
  assert (params.learning_rate, params.train_step, params.warmup_step,
          params.train_batch_size) == (0.1, 10000, 1000, 128)
  assert params.optimizer == "adamw" and params.do_train
  assert params.max_seq_length == 512  # not in the recipe: the default
  assert params.runtime.output_dir == "/tmp/x" and params.runtime.seed is None
  assert user_set >= {"output_dir", "learning_rate", "do_train"}
  assert "train_step" not in user_set
  assert values["learning_rate"].help.endswith("Unset: the task's recipe.")
  values.unparse_flags()
  values(["prog", "--spm_model_file=sp.model"])
  with pytest.raises(UserInputError, match="^--output_dir is required$"):
    settings_flags.read_settings(FinetuningParams, flag_values=values)


def test_flat_values_round_trip_through_the_nested_settings():
  params = PretrainingParams.from_flat(input_file="a", output_dir="b",
                                       albert_config_file="c", seed=7,
                                       learning_rate=0.5)
  assert params.runtime == runtime_params.RuntimeParams(output_dir="b",
                                                        seed=7)
  flat = settings_fields.to_flat(params)
  assert settings_fields.from_flat(PretrainingParams, flat) == params
  moved = settings_fields.replace(params, output_dir="z", num_train_steps=3)
  assert (moved.runtime.output_dir, moved.runtime.seed,
          moved.num_train_steps, moved.learning_rate) == ("z", 7, 3, 0.5)
  with pytest.raises(TypeError, match="no settings .'dropout'"):
    PretrainingParams.from_flat(input_file="a", output_dir="b",
                                albert_config_file="c", dropout=0.1)


def test_a_shared_flag_keeps_each_class_default_and_choices():
  @dataclasses.dataclass(frozen=True)
  class First:
    rate: float = settings_fields.setting(0.5, "A rate.")
    kind: str = settings_fields.setting("a", "A kind.", choices=("a", "b"))

  @dataclasses.dataclass(frozen=True)
  class Second:
    rate: float = settings_fields.setting(2.0, "Another rate.")
    kind: str = settings_fields.setting("c", "Another.", choices=("c", "a"))

  values = _flag_values(First, Second)
  values(["prog"])
  assert settings_flags.read_settings(First, flag_values=values)[0] == First()
  assert settings_flags.read_settings(Second, flag_values=values)[0] == (
      Second())
  values.unparse_flags()
  values(["prog", "--kind=c", "--rate=3"])  # Second's choice: absl takes it
  assert settings_flags.read_settings(Second, flag_values=values)[0] == (
      Second(rate=3.0, kind="c"))
  with pytest.raises(UserInputError, match=r"^--kind=c must be one of a, b$"):
    settings_flags.read_settings(First, flag_values=values)

  @dataclasses.dataclass(frozen=True)
  class Clash:
    rate: str = settings_fields.setting("fast", "A word.")

  with pytest.raises(TypeError, match="--rate is defined twice with "
                     "different types: FloatParser and ArgumentParser"):
    settings_flags.define_flags(Clash, "test_module", values)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NeedsConfig:
  albert_config_file: str = settings_fields.setting(help="Required.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _MayTakeConfig:
  albert_config_file: str = settings_fields.setting("", "Optional.")


@pytest.mark.parametrize("first", [_NeedsConfig, _MayTakeConfig])
def test_a_string_flag_required_in_one_tool_optional_in_another(first):
  """run_classifier's --albert_config_file is optional, export_savedmodel's
  required; tests load both tools in one process, in either order."""
  values = _flag_values(first)
  second = _MayTakeConfig if first is _NeedsConfig else _NeedsConfig
  settings_flags.define_flags(second, "test_module", values)
  values(["tool"])
  assert settings_flags.read_settings(_MayTakeConfig, flag_values=values)[
      0].albert_config_file == ""
  with pytest.raises(UserInputError, match="--albert_config_file is required"):
    settings_flags.read_settings(_NeedsConfig, flag_values=values)
  values(["tool", "--albert_config_file=c.json"])
  for cls in (_NeedsConfig, _MayTakeConfig):
    assert settings_flags.read_settings(cls, flag_values=values)[
        0].albert_config_file == "c.json"



def test_a_tuple_field_is_a_list_flag_read_back_as_a_tuple():
  @dataclasses.dataclass(frozen=True, kw_only=True)
  class Lists:
    input: Tuple[str, ...] = settings_fields.setting(help="Files.")
    symbols: Tuple[str, ...] = settings_fields.setting(("(", ")"), "Pieces.")

  values = _flag_values(Lists)
  assert values["symbols"].default == ["(", ")"]
  values(["prog", "--input=a.txt,b*.txt"])
  params, _ = settings_flags.read_settings(Lists, flag_values=values)
  assert params == Lists(input=("a.txt", "b*.txt"), symbols=("(", ")"))
  settings_flags.define_flags(Lists, "test_module", values)  # same default

def test_the_flag_table_lists_every_flag():
  table = settings_flags.flag_table(FinetuningParams,
                                    task_settings.SquadOptions)
  rows = table.splitlines()[2:]
  assert len(rows) == len(settings_fields.leaf_names(FinetuningParams)) + len(
      settings_fields.leaf_names(task_settings.SquadOptions))
  assert "| `--output_dir` | required |" in table
  assert "| `--learning_rate` | task recipe | Peak learning rate. |" in table
  assert "| `--dropout_prob` | 0.1 |" in table


def test_the_readme_flag_tables_are_generated_from_the_settings():
  """The tables on the docs site's Flags page (docs/flags.md)."""
  page = (ROOT / "docs" / "flags.md").read_text()
  begin, end = "<!-- flag tables: begin -->\n", "<!-- flag tables: end -->"
  section = page[page.index(begin) + len(begin):page.index(end)]
  assert section == settings_flags.readme_flag_tables()


def _calls(path, names):
  """(line, name) of every call of `names` in a module."""
  tree = ast.parse(path.read_text(), str(path))
  for node in ast.walk(tree):
    if isinstance(node, ast.Call):
      func = node.func
      name = func.attr if isinstance(func, ast.Attribute) else getattr(
          func, "id", "")
      if name in names:
        yield node.lineno, name


def test_tools_define_no_flag_by_hand():
  """Every tool (tools/*.py): every flag comes from a settings field; no
  DEFINE_* typed in the tool (tools_in_one_process relies on it)."""
  definers = {"DEFINE_string", "DEFINE_integer", "DEFINE_float",
              "DEFINE_bool", "DEFINE_enum", "DEFINE_list"}
  for path in sorted((ROOT / "tools").glob("*.py")):
    assert not list(_calls(path, definers)), path.name


def test_no_tool_writes_flags():
  """A tool reads its settings once (settings_flags.read_settings) and
  never assigns FLAGS.<name> = ... (derived values live in the settings)."""
  offenders = []
  for path in sorted((ROOT / "tools").glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
      if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [
            node.target]
        for target in targets:
          for leaf in ast.walk(target):
            if (isinstance(leaf, ast.Attribute) and
                isinstance(leaf.value, ast.Name) and
                leaf.value.id == "FLAGS"):
              offenders.append(f"{path.name}:{node.lineno}")
  assert not offenders, offenders


def test_the_library_never_reads_or_writes_flags():
  """No module of albert_tf or data_pipeline touches absl's FLAGS."""
  offenders = []
  for package in ("albert_common", "albert_tf", "data_pipeline"):
    for path in sorted((ROOT / package).rglob("*.py")):
      source = path.read_text()
      if "flags.FLAGS" in source or "from absl import flags" in source:
        offenders.append(str(path.relative_to(ROOT)))
  assert not offenders, offenders


def test_check_positive_names_the_first_bad_setting():
  params = PretrainingParams.from_flat(input_file="a", output_dir="b",
                                       albert_config_file="c",
                                       eval_batch_size=0, num_train_steps=-1)
  settings_fields.check_positive(params, ("train_batch_size",))
  with pytest.raises(UserInputError,
                     match=r"^--eval_batch_size must be positive, got 0$"):
    settings_fields.check_positive(params, ("train_batch_size",
                                            "eval_batch_size",
                                            "num_train_steps"))
