"""What albert_tf, data_pipeline and tools share: one error type and names.

The package graph is one-way: `tools` -> `albert_tf` -> `data_pipeline`, and
this module is its leaf. It imports only the standard library, so a CLI can
check its flags against these names before TensorFlow's ~5 s import.
"""


class UserInputError(ValueError):
  """Bad input from the user: a missing file, a bad flag, a corrupt record.

  Library code raises it with a message that names the file, flag or value at
  fault; `tools.cli.run` turns it into one line on stderr and exit status 1
  instead of a stack trace.
  """


# The encoder's inputs, as named in TF Hub's BERT encoder interface, in the
# order the signatures list them. Each is int32 [batch, seq_length].
INPUT_WORD_IDS = "input_word_ids"
INPUT_MASK = "input_mask"
INPUT_TYPE_IDS = "input_type_ids"
ENCODER_INPUT_NAMES = (INPUT_WORD_IDS, INPUT_MASK, INPUT_TYPE_IDS)

# --strategy values (see albert_tf.training.strategy.create_strategy).
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")

# --dtype values: the compute precision of training.
DTYPES = ("float32", "bfloat16", "float16")

# --seed values: any integer in [0, MAX_SEED] (int64's range, as TensorFlow's
# seeds are; albert_tf.training.run_support.set_global_seeds).
MAX_SEED = 2**63 - 1


def check_seed(seed) -> None:
  """UserInputError naming --seed unless it is None or in [0, MAX_SEED]."""
  if seed is not None and not 0 <= seed <= MAX_SEED:
    raise UserInputError(f"--seed must be in [0, 2**63 - 1], got {seed}")


# --optimizer values (see albert_tf.optimization.create_optimizer).
OPTIMIZERS = ("lamb", "adamw")

# Checkpoint formats: what convert_checkpoint reads and writes.
INPUT_FORMATS = ("auto", "ours", "official", "huggingface", "garden",
                 "keras_hub")
OUTPUT_FORMATS = ("ours", "official", "huggingface", "keras_hub")
