"""Checkpoint interchange: the name tables, the released TF1 layout, Model
Garden's converter side by side.

The TF1 checkpoints here are written by the test itself with tf.compat.v1
Variables and a Saver (checkpoint_conversion_kit.py), under the names
google-research/albert's modeling.py creates (listed independently of the
library's name tables). Round trips: test_checkpoint_round_trips.py; loud
failures: test_checkpoint_failures.py.
"""


import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import name_tables
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  assert_same_weights,
)
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import config_with
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  official_shapes,
)
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  write_tf1_checkpoint,
)

# --- Name tables --------------------------------------------------------------


def _check_one_to_one(table):
  """Both columns of a name table are one-to-one."""
  for column in ("ours", "theirs"):
    names = [getattr(e, column) for e in table]
    assert len(names) == len(set(names)), f"duplicate {column} names"


@pytest.mark.slow
@pytest.mark.parametrize("share,groups,inner", [
    ("all", 1, 1), ("all", 2, 2), ("attention", 2, 1), ("ffn", 1, 2),
    ("none", 1, 1)])
def test_our_shapes_match_the_built_model(tiny_config, share, groups, inner):
  config = config_with(tiny_config, num_hidden_layers=4,
                       num_hidden_groups=groups, inner_group_num=inner,
                       share_parameters=share)
  model = AlbertPretrainer(AlbertEncoder(config))
  variables = converter.canonical_variables(model)
  assert len(variables) == len(model.weights)  # every variable, once
  assert {n: tuple(v.shape) for n, v in variables.items()} == (
      name_tables.our_shapes(config))


@pytest.mark.parametrize("groups,inner", [(1, 1), (2, 1), (2, 3)])
def test_official_table_covers_official_names(tiny_config, groups, inner):
  config = config_with(tiny_config, num_hidden_layers=4,
                       num_hidden_groups=groups, inner_group_num=inner)
  for layout in ("official", "huggingface"):
    table = name_tables.table_for(layout, config)
    _check_one_to_one(table)
    assert {e.ours for e in table} == set(name_tables.our_shapes(config))
  table = name_tables.official_table(config)
  assert {e.theirs for e in table} == set(official_shapes(config))
  # Every declared source shape is the official one.
  ours = name_tables.our_shapes(config)
  for e in table:
    assert e.transform.source_shape(ours[e.ours]) == (
        official_shapes(config)[e.theirs]), e.theirs


def test_official_and_hf_layouts_reject_unshared(tiny_config):
  config = config_with(tiny_config, share_parameters="attention")
  for layout in ("official", "huggingface"):
    with pytest.raises(UserInputError, match="share_parameters"):
      name_tables.table_for(layout, config)


# --- Released TF1 layout -----------------------------------------------------


@pytest.mark.parametrize("groups,inner,module", [(1, 1, False), (2, 2, True)])
def test_tf1_checkpoint_loads_exactly(tmp_path, tiny_config, groups, inner,
                                      module):
  config = config_with(tiny_config, num_hidden_layers=4,
                       num_hidden_groups=groups, inner_group_num=inner)
  prefix = str(tmp_path / "model.ckpt-1000")
  values = write_tf1_checkpoint(prefix, official_shapes(config),
                                name_prefix="module/" if module else "")
  assert converter.detect_format(prefix) == "official"
  model = AlbertPretrainer(AlbertEncoder(config))
  report = converter.load_weights_into(model, str(tmp_path))  # a directory
  assert report.format == "official" and not report.not_in_checkpoint
  assert len(report.loaded) == len(model.weights)
  h, n = config.hidden_size, config.num_attention_heads
  g = groups - 1
  layer = model.encoder.get_layer(f"group_{g}_inner_{inner - 1}_attention")
  query = values[f"bert/encoder/transformer/group_{g}/inner_group_{inner - 1}"
                 "/attention_1/self/query/kernel"]
  np.testing.assert_array_equal(layer.attention._query_dense.kernel.numpy(),
                                query.reshape(h, n, h // n))
  np.testing.assert_array_equal(
      model.sentence_order.dense.kernel.numpy(),
      values["cls/seq_relationship/output_weights"].T)


def test_tf1_encoder_only_checkpoint_into_pretrainer_reports_heads(
    tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config, heads=False))
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  report = converter.load_weights_into(model, prefix)
  assert sorted(report.not_in_checkpoint) == sorted(
      n for n in name_tables.our_shapes(tiny_config) if name_tables.is_head(n))
  encoder = AlbertEncoder(tiny_config)
  report = converter.load_weights_into(encoder, prefix)
  assert not report.unused and not report.not_in_checkpoint


def test_tf1_pretraining_checkpoint_into_encoder_reports_unused_heads(
    tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config))
  report = converter.load_weights_into(AlbertEncoder(tiny_config), prefix)
  assert len(report.unused) == 7 and "masked_lm/output_bias" in report.unused


def _garden_config(config):
  from official.legacy.albert import configs as garden_configs
  values = {k: v for k, v in config.to_dict().items()
            if k != "share_parameters"}
  return garden_configs.AlbertConfig.from_dict(values)


def _garden_converter():
  """Model Garden's converter module, its command-line flags defined on a
  FlagValues of its own: it defines --albert_config_file as our tools do,
  so importing it after a tool ran in this process would fail."""
  import importlib
  import sys
  from unittest import mock

  from absl import flags
  name = "official.nlp.tools.tf2_albert_encoder_checkpoint_converter"
  if name in sys.modules:
    return sys.modules[name]
  own = flags.FlagValues()

  def on_own(define):
    return lambda *args, **kwargs: define(*args,
                                          **dict(kwargs, flag_values=own))

  with mock.patch.object(flags, "DEFINE_string",
                         on_own(flags.DEFINE_string)), \
      mock.patch.object(flags, "DEFINE_enum", on_own(flags.DEFINE_enum)):
    return importlib.import_module(name)


def test_parity_with_model_garden_converter(tmp_path, tiny_config,
                                            encoder_inputs):
  """Our TF1 reader and Model Garden's converter give the same encoder (in
  a process where a tool already defined --albert_config_file)."""
  from official.nlp.modeling import networks

  import tools.run_classifier  # noqa: F401  (defines the shared flag)
  mg = _garden_converter()
  tf1_prefix = str(tmp_path / "tf1" / "model.ckpt")
  write_tf1_checkpoint(tf1_prefix, official_shapes(tiny_config))
  garden_path = str(tmp_path / "garden" / "ckpt")
  (tmp_path / "garden" / "temp_v1").mkdir(parents=True)  # as its CLI expects
  mg.convert_checkpoint(_garden_config(tiny_config), garden_path, tf1_prefix,
                        "encoder", converted_model="encoder")
  garden = mg._create_albert_model(_garden_config(tiny_config))
  assert isinstance(garden, networks.AlbertEncoder)
  garden_file = tf.train.latest_checkpoint(str(tmp_path / "garden"))
  tf.train.Checkpoint(encoder=garden).read(
      garden_file).assert_existing_objects_matched()
  expected = garden(encoder_inputs)
  # Model Garden's encoder returns a list unless dict_outputs=True.
  expected_sequence = (expected["sequence_output"] if isinstance(expected, dict)
                       else expected[0])
  expected_pooled = (expected["pooled_output"] if isinstance(expected, dict)
                     else expected[1])

  ours = AlbertEncoder(tiny_config)
  converter.load_weights_into(ours, tf1_prefix)
  actual = ours(encoder_inputs)
  assert np.abs(expected_sequence).max() > 0.1
  np.testing.assert_allclose(actual["sequence_output"], expected_sequence,
                             atol=1e-5)
  np.testing.assert_allclose(actual["pooled_output"], expected_pooled,
                             atol=1e-5)

  # And Model Garden's own checkpoint loads into ours, with the same result.
  assert converter.detect_format(garden_file) == "garden"
  from_garden = AlbertEncoder(tiny_config)
  report = converter.load_weights_into(from_garden, str(tmp_path / "garden"))
  assert report.format == "garden"
  assert_same_weights(ours, from_garden)
