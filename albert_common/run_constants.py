"""The values a run's settings may take, shared by the tools and the library.

Standard library only: the tools check settings against them before
TensorFlow is imported.
"""

from albert_common.errors import UserInputError

# strategy values (see albert_tf.training.strategy.create_strategy).
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")

# dtype values: the compute precision of training.
DTYPES = ("float32", "bfloat16", "float16")

# seed values: any integer in [0, MAX_SEED] (int64's range, as TensorFlow's
# seeds are; albert_tf.training.seeds.set_global_seeds).
MAX_SEED = 2**63 - 1

# optimizer values (see albert_tf.optimization.create_optimizer).
OPTIMIZERS = ("lamb", "adamw")

# Checkpoint formats: what convert_checkpoint reads and writes.
INPUT_FORMATS = ("auto", "ours", "official", "huggingface", "garden",
                 "keras_hub")
OUTPUT_FORMATS = ("ours", "official", "huggingface", "keras_hub")

# A task export's asset recording its tokenizer's settings
# ({"do_lower_case": bool}): written by albert_tf.exports.atomic_export,
# read when the export is a fine-tuning tool's --init_checkpoint
# (albert_tf.checkpoints.task_models.source_paths). Older exports have none.
EXPORT_TOKENIZER_FILE = "tokenizer.json"

# Early exit on a regression head: a prediction that changes by less than
# this between applications counts as "the same" (in label units; STS-B's
# are 0..5). The one default of --exit_threshold and of every library
# function and export that applies the rule: 0.0 would never exit.
EXIT_THRESHOLD = 0.1


def check_seed(seed) -> None:
  """UserInputError naming `seed` unless it is None or in [0, MAX_SEED]."""
  if seed is not None and not 0 <= seed <= MAX_SEED:
    raise UserInputError(f"--seed must be in [0, 2**63 - 1], got {seed}")
