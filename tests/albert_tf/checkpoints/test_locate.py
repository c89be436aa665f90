"""A folder given as a checkpoint: a released google-research/albert
download has no `checkpoint` state file, only `model.ckpt-best.*` (or
`model.ckpt.*`), albert_config.json and 30k-clean.model. Its one prefix is
found; several prefixes without a state file are one line naming them; the
state file, when there is one, decides."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import locate
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder


@pytest.fixture
def released(tmp_path, tiny_config):
  """Our random model written in the official TF1 layout as a download
  ships it: (folder, its arrays)."""
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  ours = tf.train.Checkpoint(model=model).write(str(tmp_path / "ours" /
                                                    "ckpt"))
  folder = tmp_path / "albert_tiny"
  converter.convert_checkpoint(tiny_config, ours,
                               str(folder / "model.ckpt-best"), "official")
  os.remove(folder / "checkpoint")  # a download has none
  tiny_config.to_json_file(str(folder / "albert_config.json"))
  (folder / "30k-clean.model").write_bytes(b"")
  return str(folder), converter.read_weights(ours, tiny_config).arrays


def test_the_one_prefix_of_a_released_folder_is_found(released, tiny_config):
  folder, expected = released
  assert locate.resolve_path(folder) == (
      "tf", os.path.join(folder, "model.ckpt-best"))
  weights = converter.read_weights(folder, tiny_config)
  assert weights.format == "official"
  assert sorted(weights.arrays) == sorted(expected)
  for name, array in expected.items():
    np.testing.assert_array_equal(weights.arrays[name], array)


def test_several_prefixes_without_a_state_file_are_one_line(released):
  folder, _ = released
  for suffix in (".index", ".data-00000-of-00001"):
    tf.io.gfile.copy(os.path.join(folder, "model.ckpt-best" + suffix),
                     os.path.join(folder, "model.ckpt-100" + suffix))
  with pytest.raises(UserInputError) as info:
    locate.resolve_path(folder)
  assert str(info.value) == (
      f"{folder} holds 2 checkpoints and no 'checkpoint' state file saying "
      "which is the latest: model.ckpt-100, model.ckpt-best; give one by "
      f"its prefix, e.g. {os.path.join(folder, 'model.ckpt-best')}")
  # With a state file, it decides.
  with open(os.path.join(folder, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "model.ckpt-100"\n')
  assert locate.resolve_path(folder) == (
      "tf", os.path.join(folder, "model.ckpt-100"))
