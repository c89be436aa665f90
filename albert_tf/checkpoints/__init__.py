"""Checkpoint interchange: released TF1, Hugging Face, Model Garden and ours.

`name_tables` holds the declarative name tables, `configs` the config
conversion (albert_config.json / Hugging Face config.json), `converter` the
strict readers, writers and `load_weights_into`.
"""

from albert_tf.checkpoints.converter import convert_checkpoint
from albert_tf.checkpoints.converter import detect_format
from albert_tf.checkpoints.converter import load_weights_into
from albert_tf.checkpoints.converter import read_weights
