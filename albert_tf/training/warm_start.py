"""Warm-starting a training run from existing weights.

`init_checkpoint` may be one of our checkpoints (a whole model or an encoder),
a released google-research/albert TF1 checkpoint, a Hugging Face safetensors
file or folder, or a Model Garden encoder checkpoint: the layout is detected
by `albert_tf.checkpoints.weight_loading`, which loads every encoder variable or
fails listing what does not match. Only weights are loaded, never optimizer
state or the step.
"""

from typing import Optional, Sequence


def head_request(params, labels: Optional[Sequence[str]]):
  """The checkpoints.task_heads.HeadRequest of fine-tuning settings
  (--init_head, --label_names: the source head's names in its order) for a
  task whose outputs are `labels` (None: no named labels)."""
  from albert_tf.checkpoints.task_models.task_heads import HeadRequest
  names = [n.strip() for n in params.label_names.split(",") if n.strip()]
  return HeadRequest(init_head=params.init_head, labels=labels,
                     label_names=names or None)


def warm_start(model, init_checkpoint: str, head=None, source=None) -> str:
  """Loads weights into `model` (an AlbertPretrainer or fine-tuning model).

  Args:
    head: a checkpoints.task_heads.HeadRequest for a fine-tuning model (the
      source's task head restored or not, labels by name).
    source: `init_checkpoint` already read
      (checkpoints.reading.readers.Weights), else it is read here.

  Returns:
    A one-line summary of what was loaded and what was left initialised.

  Raises:
    UserInputError: missing file, or a checkpoint of another architecture
      (the message lists every mismatched name and shape).
  """
  # Imported here: the readers of every layout load only for a warm start.
  from albert_tf.checkpoints import weight_loading
  # load_weights_into logs the summary (source, variables loaded): once.
  if source is not None:
    return weight_loading.assign_and_log(model, source, head).summary()
  return weight_loading.load_weights_into(model, init_checkpoint,
                                          head=head).summary()
