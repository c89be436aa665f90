"""The --init_checkpoint of a fine-tuning run, read once before its data.

A fine-tuned task model (a Hugging Face AlbertFor* folder, an official
TF1 fine-tuned checkpoint) is read and checked when the settings are
(`finetuning_params.prepare`): its architecture against the config, its
task head against the tool's (`head_kind`). So a source that does not fit
stops the tool in one line before any file is written under --output_dir;
the runner assigns the weights read here instead of reading them again.
"""

from typing import Optional

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

# head_kind of a tool that checks the source's head itself, once its
# options say which head it builds (run_squad).
ANY_HEAD = "any"


def has_checkpoint(output_dir: str) -> bool:
  """Whether --output_dir holds a run to resume (its `checkpoint` file)."""
  return bool(output_dir) and file_io.exists(
      file_io.join(output_dir, "checkpoint"))


def read_source(params, config: AlbertConfig,
                head_kind: Optional[str] = None):
  """The reading.readers.Weights of --init_checkpoint, checked, or None
  (no --init_checkpoint, --output_dir resumes a run, or no `head_kind`:
  a library caller's runner reads the source itself).

  Args:
    params: FinetuningParams.
    config: the run's encoder config.
    head_kind: the tool's task head (checkpoints.head_tables.HEAD_KINDS);
      a source head of another kind, or a partial one, is refused unless
      --init_head=false. ANY_HEAD: read, the head not checked here.

  Raises:
    UserInputError: in one line, a source that does not fit.
  """
  if (not head_kind or not params.init_checkpoint or
      has_checkpoint(params.runtime.output_dir)):
    return None
  from albert_tf.checkpoints.reading import readers  # TensorFlow
  from albert_tf.checkpoints.task_models import task_heads
  try:
    weights = readers.read_weights(params.init_checkpoint, config)
    weights.check_config(config)
  except UserInputError as e:  # a misfit lists every variable: one line
    raise UserInputError(" ".join(
        line.strip() for line in str(e).splitlines() if line.strip())
                         ) from None
  if (params.init_head and weights.head is not None and
      head_kind != ANY_HEAD):
    task_heads.check_kind(weights.head, head_kind)
  return weights
