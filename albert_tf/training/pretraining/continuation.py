"""Continued pretraining: a run with --init_checkpoint starts where its
source stopped.

`read_source` reads the init checkpoint once, before the run writes
anything (a checkpoint that does not fit --albert_config_file is one line),
checks the run's data against the source's, and decides how the run starts:
  weights: the encoder always; the MLM head (transform, LayerNorm, output
    bias) and the SOP head whenever the checkpoint has them. One line says
    which came from the checkpoint; one warning says what a missing head
    costs.
  optimizer: from our own run, its LAMB slots and step (the warm-up and
    decay go on from there) unless --restart_schedule; from any other
    layout, or with --restart_schedule, fresh slots and step 0.
`start_from` applies it (the CheckpointManager's init_fn); the LAMB slots
and step are checked to have been restored (`restore_optimizer`).

Files in output_dir:
  continued_from.json  the source and the run's first step: a resumed
    continued run places its data stream at (step - first step).
  data_settings.json   what the run's records were written with (the
    create_pretraining_data stats JSON beside --input_file): a run continued
    from this one compares its own with them.
"""

import dataclasses
import math
import re
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import locate
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints import weight_loading
from albert_tf.checkpoints.reading import object_readers
from albert_tf.checkpoints.reading import readers
from albert_tf.config import AlbertConfig
from albert_tf.training.pretraining.params import PretrainingParams
from data_pipeline.pretraining import reader as pretraining_input

CONTINUED_FROM_FILE = "continued_from.json"
DATA_SETTINGS_FILE = "data_settings.json"
HEADS = (("masked_lm", "MLM head"), ("sentence_order", "SOP head"))
# Data settings a continued run must share with its source (albert_zh#55:
# sequence length and mask ratio), from the records' stats JSON options.
_OPTION_KEYS = ("masked_lm_prob", "ngram", "favor_shorter_ngram",
                "do_whole_word_mask")


@dataclasses.dataclass
class Source:
  """The init checkpoint of a fresh continued run.

  Attributes:
    weights: its arrays in canonical names (checked against the config).
    optimizer_prefix: our checkpoint whose optimizer state and step the run
      takes, or None (fresh slots, step 0).
    first_step: the run's first step (the source's step, or 0).
  """
  weights: readers.Weights
  optimizer_prefix: Optional[str]
  first_step: int


def saved_optimizer_step(prefix: Optional[str],
                         required: bool = True) -> Optional[int]:
  """The optimizer step saved in our checkpoint `prefix` (0 for None).

  Returns None when the checkpoint holds no optimizer and not `required`.
  """
  if not prefix:
    return 0
  # A reader on the prefix: tf.train.load_checkpoint would first ask whether
  # the prefix is a folder, which ram:// answers wrongly.
  reader = tf.compat.v1.train.NewCheckpointReader(prefix)
  names = [name for name in reader.get_variable_to_shape_map()
           if re.fullmatch(r"optimizer/(.*/)?iter/\.ATTRIBUTES/VARIABLE_VALUE",
                           name)]
  if not names:
    if required:
      raise UserInputError(f"checkpoint {prefix} holds no optimizer step")
    return None
  return int(reader.get_tensor(min(names, key=len)))


def _one_line(error: UserInputError) -> str:
  return " ".join(line.strip() for line in str(error).splitlines()
                  if line.strip())


def read_source(params: PretrainingParams,
                config: AlbertConfig) -> Optional[Source]:
  """The init checkpoint read and checked, or None when the run does not
  start from one (no --init_checkpoint, or output_dir already has a
  checkpoint: the run resumes). Warns once when the data differs from the
  source run's.

  Raises:
    UserInputError: in one line: a checkpoint that does not fit the config
      (each variable with both shapes), or a schedule that would go on past
      --num_train_steps.
  """
  if not params.init_checkpoint or tf.train.latest_checkpoint(
      params.runtime.output_dir):
    return None
  try:
    weights = readers.read_weights(params.init_checkpoint, config)
    weights.check_config(config)
  except UserInputError as e:
    raise UserInputError(
        f"--init_checkpoint={params.init_checkpoint} with "
        f"--albert_config_file={params.albert_config_file}: "
        f"{_one_line(e)}") from None
  optimizer_prefix, first_step = None, 0
  if weights.format == "ours" and not params.restart_schedule and (
      len(name_tables.heads_in(weights.arrays)) == len(HEADS)):
    step = saved_optimizer_step(weights.path, required=False)
    if step is not None:
      optimizer_prefix, first_step = weights.path, step
  if first_step >= params.num_train_steps:
    raise UserInputError(
        f"--init_checkpoint={params.init_checkpoint} is at step {first_step} "
        "and the run goes on from its optimizer state and schedule: "
        f"--num_train_steps={params.num_train_steps} (counted from the "
        "source's start) leaves nothing to train; raise it, or pass "
        "--restart_schedule to count from 0")
  _warn_on_data_differences(params, weights.path)
  return Source(weights, optimizer_prefix, first_step)


def start_from(source: Source, params: PretrainingParams, model,
               checkpoint: tf.train.Checkpoint) -> None:
  """Restores `source` into `model` (and the optimizer of `checkpoint`,
  which holds `model`), logging what came from it. In the strategy's
  scope."""
  report = weight_loading.assign_weights(model, source.weights)
  if source.optimizer_prefix:
    restore_optimizer(checkpoint, source.optimizer_prefix,
                      params.init_checkpoint, source.first_step)
  restored = name_tables.heads_in(report.loaded)
  parts = ["encoder"] + (["a fresh pooler (the source has none: the SOP "
                          "head reads it)"] if report.fresh_pooler else []) + [
                              label for head, label in HEADS
                              if head in restored]
  if source.optimizer_prefix:
    schedule = (f"its optimizer state and step {source.first_step} (the "
                "schedule goes on; --restart_schedule starts it afresh)")
  elif params.restart_schedule:
    schedule = "fresh optimizer slots, step 0 (--restart_schedule)"
  else:
    schedule = (f"fresh optimizer slots, step 0 (the {source.weights.format}"
                " layout holds no optimizer state)")
  logging.info("--init_checkpoint=%s (%s layout): restored %s; %s",
               params.init_checkpoint, source.weights.format,
               ", ".join(parts), schedule)
  missing = [head for head, _ in HEADS if head not in restored]
  if missing:
    logging.warning("%s", missing_heads_warning(
        params.init_checkpoint, missing,
        model_vocab_size(source.weights), report.fresh_pooler))


def restore_optimizer(checkpoint: tf.train.Checkpoint, prefix: str,
                      init_checkpoint: str, step: int) -> None:
  """Reads `prefix` into `checkpoint` (model + optimizer) and checks that
  the optimizer's step is `step` and (after step 0) every slot of every
  trainable variable holds the value `prefix` saved for it.

  The slots are created first: a read restores a slot that does not exist
  yet only when it is created later, which no status can check. A source
  whose slots do not fit (another optimizer, a loss-scale wrapper) would
  otherwise start from zeros while the log says they were restored.

  Raises:
    UserInputError: in one line, naming `prefix` and a slot that did not
      restore.
  """
  optimizer = checkpoint.optimizer
  inner = getattr(optimizer, "inner_optimizer", optimizer)
  inner._create_all_weights(checkpoint.model.trainable_variables)
  checkpoint.read(prefix).expect_partial()
  # At step 0 no update has made slots yet (ckpt-0 is written before the
  # first): fresh zero slots are the source's state.
  missing = unrestored_slots(checkpoint, inner, prefix) if step > 0 else []
  if missing or int(optimizer.iterations.numpy()) != step:
    what = (f"{len(missing)} of its optimizer slots did not restore "
            f"(first: {missing[0]})" if missing else
            f"its step {step} did not restore (the run is at "
            f"{int(optimizer.iterations.numpy())})")
    raise UserInputError(
        f"--init_checkpoint={init_checkpoint}: {prefix} does not fit this "
        f"run's {type(optimizer).__name__} (--optimizer, --dtype): {what}; "
        "pass --restart_schedule to take its weights only, with fresh "
        "slots and step 0")


def unrestored_slots(checkpoint: tf.train.Checkpoint, optimizer,
                     prefix: str) -> List[str]:
  """"<variable path>/<slot>" of each slot of `optimizer` (on the model's
  trainable variables) whose value is not the one `prefix` saved for that
  variable's slot of that name (under whatever optimizer path it saved)."""
  reader = locate.checkpoint_reader(prefix)
  saved = list(reader.get_variable_to_shape_map())
  suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
  paths = {id(v): k[:-len(suffix)] for k, v in
           object_readers.checkpoint_keys(checkpoint).items()}
  missing = []
  for variable in checkpoint.model.trainable_variables:
    path = paths.get(id(variable), variable.name)
    for name in optimizer.get_slot_names():
      pattern = re.compile(re.escape(f"{path}/.OPTIMIZER_SLOT/") + r".+/" +
                           re.escape(name + suffix))
      keys = [k for k in saved if pattern.fullmatch(k)]
      if len(keys) != 1 or not np.array_equal(
          optimizer.get_slot(variable, name).numpy(),
          reader.get_tensor(keys[0])):
        missing.append(f"{path}/{name}")
  return missing


def model_vocab_size(weights: readers.Weights) -> int:
  return weights.arrays["embeddings/word_embeddings/embeddings"].shape[0]


def missing_heads_warning(path: str, missing: List[str],
                          vocab_size: int, fresh_pooler: bool = False) -> str:
  """One line: which heads `path` lacks (and, with `fresh_pooler`, that
  the pooler the SOP head reads is new too: Hugging Face AlbertForMaskedLM
  has none) and what starting them from random initialisation costs."""
  costs = []
  if "masked_lm" in missing:
    costs.append(
        "the MLM head (transform, LayerNorm, output bias) starts from random "
        f"init: MLM loss at step 0 is about ln({vocab_size}) = "
        f"{math.log(vocab_size):.2f} and MLM accuracy near 0, and the early "
        "updates, which retrain it, also move the encoder (lower the "
        "learning rate or warm up longer)")
  if "sentence_order" in missing:
    what = ("the SOP head (sop_classifier / cls/seq_relationship) starts"
            if not fresh_pooler else
            "the SOP head (sop_classifier / cls/seq_relationship) and the "
            "pooler it reads (the source has none) start")
    costs.append(
        f"{what} from random init: SOP loss at step 0 is about ln 2 = "
        f"{math.log(2):.2f} and SOP accuracy about 50%, and the early "
        "updates retrain it")
  return (f"--init_checkpoint={path} has no "
          f"{' and no '.join(dict(HEADS)[h] for h in missing)}: "
          + "; ".join(costs))


def data_settings(params: PretrainingParams) -> Dict:
  """What the run's records were written with: the sequence shape, and the
  masking and tokenizer settings when create_pretraining_data's stats JSON
  is beside --input_file."""
  settings = {"max_seq_length": params.max_seq_length,
              "max_predictions_per_seq": params.max_predictions_per_seq}
  for path in pretraining_input.resolve_files(params.input_file):
    for stats in (path + ".stats.json",
                  re.sub(r"-\d{5}-of-\d{5}$", "", path) + ".stats.json"):
      if not file_io.exists(stats):
        continue
      written = file_io.read_json_object(stats, "the records' stats").get(
          "settings")
      if not isinstance(written, dict):
        continue
      options = written.get("options", {})
      settings.update({k: options[k] for k in _OPTION_KEYS if k in options})
      settings["do_lower_case"] = written.get("do_lower_case")
      settings["tokenizer"] = written.get("tokenizer", "sentencepiece")
      return settings
  return settings


def _warn_on_data_differences(params: PretrainingParams,
                              source_path: str) -> None:
  """One warning naming each data setting that differs from the source
  run's (its data_settings.json beside the checkpoint), if known."""
  path = file_io.join(file_io.dirname(source_path), DATA_SETTINGS_FILE)
  if not file_io.exists(path):
    return
  source = file_io.read_json_object(path, "the source run's data settings")
  ours = data_settings(params)
  differences = [f"{key} {source[key]!r} -> {ours[key]!r}"
                 for key in ours if key in source and source[key] != ours[key]]
  if differences:
    logging.warning(
        "the data differs from the source run's (%s): %s. The source's "
        "heads and position embeddings were fitted to its lengths and "
        "masking; write the records with the source's settings "
        "(create_pretraining_data) unless the change is what you want",
        path, ", ".join(differences))


def record_start(params: PretrainingParams, source: Optional[Source]) -> None:
  """Writes DATA_SETTINGS_FILE and, for a continued run,
  CONTINUED_FROM_FILE (a fresh run's chief, at its start)."""
  out = params.runtime.output_dir
  file_io.write_json_atomic(file_io.join(out, DATA_SETTINGS_FILE),
                            data_settings(params))
  if source is not None:
    file_io.write_json_atomic(file_io.join(out, CONTINUED_FROM_FILE), {
        "init_checkpoint": params.init_checkpoint,
        "read_from": source.weights.path,
        "format": source.weights.format,
        "heads": sorted(name_tables.heads_in(source.weights.arrays)),
        "restart_schedule": params.restart_schedule,
        "first_step": source.first_step})


def first_step(output_dir: str) -> int:
  """The step a continued run in `output_dir` started at (0 for others)."""
  path = file_io.join(output_dir, CONTINUED_FROM_FILE)
  if not file_io.exists(path):
    return 0
  return int(file_io.read_json_object(path, "the run's start")["first_step"])
