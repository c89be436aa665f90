"""Reads google-research/albert TF1 checkpoints (the "official" layout).

Released `model.ckpt-NNN` files and the TF-Hub `module/` prefix; optimizer
slots (adam_m, adam_v, lamb_m, lamb_v, Adam, ...) and global_step are
skipped; a fine-tuned checkpoint's task head (head_tables: `output_weights`,
`cls/squad/...`, the v2 head) is kept under its own names for task_heads;
every other name must map (name_tables.official_table).
"""

from typing import Dict, Tuple

from absl import logging
import numpy as np

from albert_tf.checkpoints import locate
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import task_heads
from albert_tf.config import AlbertConfig

# TF1 optimizer state in released / official-trainer checkpoints.
_TF1_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/lamb_m", "/lamb_v", "/Adam",
                      "/Adam_1", "/Momentum", "/Adagrad", "/RMSProp",
                      "/RMSProp_1", "/AdamWeightDecayOptimizer",
                      "/AdamWeightDecayOptimizer_1")
_TF1_NON_WEIGHTS = ("global_step", "beta1_power", "beta2_power")


def read_official(prefix: str, config: AlbertConfig
                  ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
  """(canonical name -> array, the task head's arrays under their names) of
  the TF1 checkpoint at `prefix`."""
  reader = locate.checkpoint_reader(prefix)
  source, skipped = {}, []
  for name in reader.get_variable_to_shape_map():
    if (name.endswith(_TF1_SLOT_SUFFIXES) or
        name.split("/")[-1] in _TF1_NON_WEIGHTS):
      skipped.append(name)
      continue
    source[locate.strip_module(name)] = reader.get_tensor(name)
  if skipped:
    logging.info("skipped %d optimizer variables of %s", len(skipped), prefix)
  source, head = task_heads.split_source(source, "official")
  return mapping.map_to_ours(source, name_tables.official_table(config),
                             name_tables.our_shapes(config),
                             source_name=prefix, layout="official"), head
