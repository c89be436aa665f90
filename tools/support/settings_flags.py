"""absl flags generated from settings dataclasses, and settings read back.

Every tool declares its flags by naming its settings classes; the flag's
name, default, help and choices come from the field (see
albert_common.settings_fields), so none is typed twice:

  settings_flags.define_flags(PretrainingParams, __name__)
  ...
  def main(argv):
    params, user_set = settings_flags.read_settings(PretrainingParams)

`read_settings` is the only place that reads `FLAGS`; the library receives
the settings object and never sees a flag. `flag_table` renders a class's
flags as the Markdown tables docs/flags.md shows.

Several tools share a flag name with a default of their own (--learning_rate,
--train_batch_size, --input_format, ...). absl holds one flag per name in a
process, so a script, notebook or test that imports two tools shares it: the
flag keeps the first definition's default (what --help shows), an enum flag
accepts every tool's choices, and `read_settings` gives each settings class
its own default for a flag the user left unset and checks its own choices.
Only a clash of types (an int flag and a string flag of one name) is refused.
"""

import sys
from typing import Any, FrozenSet, Mapping, Optional, Tuple

from absl import flags

from albert_common import settings_fields
from albert_common.errors import UserInputError

FLAGS = flags.FLAGS

_DEFINERS = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
             float: flags.DEFINE_float, str: flags.DEFINE_string,
             tuple: flags.DEFINE_list}
_RECIPE_NOTE = " Unset: the task's recipe."
# The parser class of each field type's flag (an enum's is a string's).
_PARSERS = {bool: flags.BooleanParser, int: flags.IntegerParser,
            float: flags.FloatParser, str: flags.ArgumentParser,
            tuple: flags.ListParser}


def define_flags(settings_class, module: str, flag_values=FLAGS) -> None:
  """Defines one flag per leaf field of `settings_class`, as key flags of
  the tool module named `module` (so that its --help lists them). A flag
  already defined by another settings class is shared (module docstring)."""
  if module == "__main__":  # absl names the main module after its file
    module = sys.argv[0]
  for field in settings_fields.leaf_fields(settings_class):
    if field.name in flag_values:
      _share(field, flag_values[field.name])
    else:
      _define(field, flag_values, module)
    flag_values.register_key_flag_for_module(module,
                                             flag_values[field.name])


def _flag_default(field: settings_fields.LeafField) -> Any:
  if field.required or field.recipe:
    return None
  if field.type is tuple and field.default is not None:
    return list(field.default)  # absl's list flags hold lists
  return field.default


def _help(field: settings_fields.LeafField) -> str:
  return field.help + (_RECIPE_NOTE if field.recipe else "")


def _define(field, flag_values, module) -> None:
  if field.choices:
    flags.DEFINE_enum(field.name, _flag_default(field), field.choices,
                      _help(field), flag_values=flag_values,
                      module_name=module)
    return
  _DEFINERS[field.type](field.name, _flag_default(field), _help(field),
                        flag_values=flag_values, module_name=module)


def _share(field, flag) -> None:
  """Lets `field` use the flag another settings class defined: the types
  must match; an enum flag widens to accept this field's choices too (or
  any string, when this field has none), which read_settings checks."""
  parser = flag.parser
  kind = (flags.ArgumentParser if isinstance(parser, flags.EnumParser)
          else type(parser))
  if kind is not _PARSERS[field.type]:
    raise TypeError(f"flag --{field.name} is defined twice with different "
                    f"types: {kind.__name__} and "
                    f"{_PARSERS[field.type].__name__}")
  if isinstance(parser, flags.EnumParser):
    if not field.choices:
      flag.parser = flags.ArgumentParser()
    elif not set(field.choices) <= set(parser.enum_values):
      flag.parser = flags.EnumParser(
          list(parser.enum_values) + [c for c in field.choices
                                      if c not in parser.enum_values])


def user_set(flag_values=FLAGS) -> FrozenSet[str]:
  """Names of the flags given on the command line."""
  return frozenset(name for name in flag_values if flag_values[name].present)


def read_settings(settings_class, recipe: Optional[Mapping] = None,
                  flag_values=FLAGS) -> Tuple[Any, FrozenSet[str]]:
  """The settings object of `settings_class` from the parsed flags, and the
  names the user gave.

  Args:
    settings_class: a settings dataclass whose flags define_flags defined.
    recipe: values for the `recipe` fields the user left unset (the task's
      recipe); fields it does not name keep the class default.
    flag_values: absl FlagValues (FLAGS).

  Raises:
    UserInputError: a required flag is missing.
  """
  recipe = dict(recipe or {})
  values = {}
  for field in settings_fields.leaf_fields(settings_class):
    flag = flag_values[field.name]
    if flag.using_default_value:  # this class's default, not another tool's
      value = recipe.get(field.name) if field.recipe else None
      if value is None and not field.required:
        value = field.default
      if field.required:
        raise UserInputError(f"--{field.name} is required")
    else:
      value = flag.value
      if field.choices and value not in field.choices:
        raise UserInputError(f"--{field.name}={value} must be one of "
                             f"{', '.join(field.choices)}")
    if isinstance(value, list):
      value = tuple(value)  # frozen settings hold tuples
    if value is not None or field.default is None:
      values[field.name] = value
  return (settings_fields.from_flat(settings_class, values),
          user_set(flag_values))


def flag_table(*settings_classes) -> str:
  """A Markdown table of the flags of `settings_classes` (name, default,
  help), as docs/flags.md lists them."""
  rows = ["| flag | default | what it sets |", "| --- | --- | --- |"]
  for settings_class in settings_classes:
    for field in settings_fields.leaf_fields(settings_class):
      default = ("required" if field.required else
                 "task recipe" if field.recipe else repr(field.default))
      choices = (f" One of: {', '.join(field.choices)}." if field.choices
                 else "")
      rows.append(f"| `--{field.name}` | {_cell(default)} | "
                  f"{_cell(field.help + choices)} |")
  return "\n".join(rows)


def _cell(text: str) -> str:
  """Text a Markdown table cell shows as written: "|" would end the cell,
  "<pad>" would be read as an HTML tag."""
  return text.replace("|", "\\|").replace("<", "&lt;")


def readme_flag_tables() -> str:
  """docs/flags.md's tables, generated here:
  `python -c "from tools.support import settings_flags as s;
  print(s.readme_flag_tables())"` (tests/project/test_settings_flags.py keeps
  the page equal to it)."""
  from albert_tf import parameters_and_flops
  from albert_tf.checkpoints import conversion_params
  from albert_tf.exports import options
  from albert_tf.exports import options as export_options
  from albert_tf.exports.onnx import options as onnx_options
  from albert_tf.prediction import options as predict_options
  from albert_tf.training import early_exit
  from albert_tf.training import runtime_params
  from albert_tf.training.distillation import settings as distill_settings
  from albert_tf.training.finetuning import ner_settings
  from albert_tf.training.finetuning import own_data_settings
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import task_settings
  from albert_tf.training.pretraining import params as pretraining_params
  from albert_tf.training.pretraining import vocabulary_extension
  from data_pipeline.pretraining import data_creation_params
  from data_pipeline.tokenization import sentencepiece_trainer
  from data_pipeline.tokenization import wordpiece_trainer
  sections = [
      ("create_pretraining_data (`DataCreationParams`, with its "
       "`InstanceOptions` and `CorpusOptions`)",
       (data_creation_params.DataCreationParams,)),
      ("Every training tool (`RuntimeParams`)",
       (runtime_params.RuntimeParams,)),
      ("run_pretraining (`PretrainingParams`)",
       (pretraining_params.PretrainingParams,)),
      ("extend_vocabulary (`VocabularyExtensionParams`, with its "
       "`CorpusOptions`)",
       (vocabulary_extension.VocabularyExtensionParams,)),
      ("run_classifier, run_squad, run_race, run_multiple_choice, run_ner "
       "(`FinetuningParams`)", (finetuning_params.FinetuningParams,)),
      ("run_classifier (`GlueOptions`)", (task_settings.GlueOptions,)),
      ("run_classifier on your own files (`OwnDataOptions`, with its "
       "`RecordFileOptions` and `TextColumns`)",
       (own_data_settings.OwnDataOptions,)),
      ("run_classifier --early_exit (`EarlyExitOptions`)",
       (early_exit.EarlyExitOptions,)),
      ("distill (`DistillationOptions`; with run_classifier's "
       "`FinetuningParams` and `OwnDataOptions`)",
       (distill_settings.DistillationOptions,)),
      ("run_squad (`SquadOptions`)", (task_settings.SquadOptions,)),
      ("run_race (`RaceOptions`)", (task_settings.RaceOptions,)),
      ("run_multiple_choice (`MultipleChoiceOptions`, with its "
       "`RecordFileOptions` and `ChoiceColumns`)",
       (own_data_settings.MultipleChoiceOptions,)),
      ("run_ner (`NerOptions`)", (ner_settings.NerOptions,)),
      ("export_savedmodel (`EncoderExportParams`)",
       (export_options.EncoderExportParams,)),
      ("train_sentencepiece (`SentencePieceTrainingParams`)",
       (sentencepiece_trainer.SentencePieceTrainingParams,)),
      ("train_wordpiece (`WordPieceTrainingParams`)",
       (wordpiece_trainer.WordPieceTrainingParams,)),
      ("convert_checkpoint (`ConversionParams`)",
       (conversion_params.ConversionParams,)),
      ("export_tflite (`TfliteExportParams`)",
       (options.TfliteExportParams,)),
      ("export_onnx (`OnnxExportParams`)",
       (onnx_options.OnnxExportParams,)),
      ("predict (`PredictOptions`)", (predict_options.PredictOptions,)),
      ("model_summary (`ModelSummaryParams`)",
       (parameters_and_flops.ModelSummaryParams,)),
  ]
  shared = set(settings_fields.leaf_names(runtime_params.RuntimeParams))
  parts = []
  for title, classes in sections:
    table = flag_table(*classes)
    # The training tools' tables leave out the RuntimeParams they hold
    # (listed once above); model_summary's --dtype and extend_vocabulary's
    # and predict's --output_dir are their own.
    if classes[0] not in (runtime_params.RuntimeParams,
                          data_creation_params.DataCreationParams,
                          vocabulary_extension.VocabularyExtensionParams,
                          parameters_and_flops.ModelSummaryParams,
                          predict_options.PredictOptions):
      table = "\n".join(row for row in table.splitlines()
                        if not any(f"`--{n}`" in row for n in shared))
    parts.append(f"#### {title}\n\n{table}")
  return "\n\n".join(parts) + "\n"


def print_results(results: Optional[Mapping]) -> None:
  """The dev results on one line, `key=value` sorted by key (floats to 4
  decimals); nothing when there were none (e.g. --do_eval=false)."""
  if results:
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                   for k, v in sorted(results.items())))
