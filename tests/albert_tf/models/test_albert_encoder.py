"""AlbertEncoder: shapes, parameter counts, sharing, parity, precision."""

import dataclasses
import math
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import AlbertConfig
from albert_tf import AlbertEncoder

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "../../..", "configs")


def _preset(name, **changes):
  config = AlbertConfig.from_json_file(
      os.path.join(CONFIG_DIR, f"albert_{name}.json"))
  return dataclasses.replace(config, **changes)


def test_output_shapes_and_dtypes(tiny_config, encoder_inputs):
  outputs = AlbertEncoder(tiny_config)(encoder_inputs)
  assert set(outputs) == {"sequence_output", "pooled_output",
                          "encoder_outputs"}
  assert outputs["sequence_output"].shape == (3, 12, 32)
  assert outputs["pooled_output"].shape == (3, 32)
  assert len(outputs["encoder_outputs"]) == 2
  assert all(t.shape == (3, 12, 32) for t in outputs["encoder_outputs"])
  np.testing.assert_array_equal(outputs["encoder_outputs"][-1],
                                outputs["sequence_output"])
  assert outputs["sequence_output"].dtype == tf.float32


@pytest.mark.slow
@pytest.mark.parametrize("name,expected", [
    ("base", 11_683_584), ("large", 17_683_968), ("xlarge", 58_724_864),
    ("xxlarge", 222_595_584)])
def test_preset_parameter_counts(name, expected):
  assert AlbertEncoder(_preset(name)).count_params() == expected


@pytest.mark.slow
@pytest.mark.parametrize("share,expected,paper_millions", [
    ("none", 89_650_176, 89), ("attention", 63_647_232, 64),
    ("ffn", 37_686_528, 38), ("all", 11_683_584, 12)])
def test_sharing_ablation_parameter_counts(share, expected, paper_millions):
  count = AlbertEncoder(_preset("base", share_parameters=share)).count_params()
  assert count == expected
  assert abs(count / 1e6 - paper_millions) < 0.7  # the paper's Table 4


def test_model_garden_counts_agree():
  from official.nlp.modeling import networks
  config = _preset("base")
  garden = networks.AlbertEncoder(
      vocab_size=30000, embedding_width=128, hidden_size=768, num_layers=12,
      num_attention_heads=12, intermediate_size=3072,
      max_sequence_length=512, type_vocab_size=2)
  assert garden.count_params() == AlbertEncoder(config).count_params()


@pytest.mark.parametrize("share,per_layer", [
    ("all", 0), ("attention", 6), ("ffn", 10), ("none", 16)])
def test_variable_count_grows_only_with_unshared_sublayers(tiny_config, share,
                                                           per_layer):
  counts = [
      len(AlbertEncoder(dataclasses.replace(
          tiny_config, num_hidden_layers=layers,
          share_parameters=share)).trainable_variables)
      for layers in (2, 6)]
  # An attention sublayer holds 10 variables (q, k, v, out: kernel + bias;
  # LayerNorm gamma + beta), a feed-forward sublayer 6.
  assert counts[1] - counts[0] == 4 * per_layer


def test_groups_own_distinct_weights(tiny_config):
  config = dataclasses.replace(tiny_config, num_hidden_layers=4,
                               num_hidden_groups=2, inner_group_num=2)
  encoder = AlbertEncoder(config)
  names = {v.name.split("/")[0] for v in encoder.trainable_variables}
  assert {n for n in names if n.startswith("group_")} == {
      f"group_{g}_inner_{k}_{kind}" for g in range(2) for k in range(2)
      for kind in ("attention", "ffn")}


# --- Parity with Model Garden's AlbertEncoder --------------------------------

_GARDEN_TO_OURS = {
    "word_embeddings/embeddings": "embeddings/word_embeddings/embeddings",
    "position_embedding/embeddings": "embeddings/position_embeddings",
    "type_embeddings/embeddings": "embeddings/token_type_embeddings/embeddings",
    "embeddings/layer_norm": "embeddings/layer_norm",
    "embedding_projection": "embeddings/embedding_projection",
    "transformer/self_attention_layer_norm":
        "group_0_inner_0_attention/layer_norm",
    "transformer/self_attention": "group_0_inner_0_attention/self_attention",
    "transformer/intermediate": "group_0_inner_0_ffn/intermediate",
    "transformer/output_layer_norm": "group_0_inner_0_ffn/layer_norm",
    "transformer/output": "group_0_inner_0_ffn/output",
    "pooler_transform": "pooler",
}


def _copy_garden_weights(garden, ours):
  ours_by_name = {v.name: v for v in ours.trainable_variables}
  assert len(ours_by_name) == len(garden.trainable_variables)
  for variable in garden.trainable_variables:
    name = variable.name
    for prefix, replacement in _GARDEN_TO_OURS.items():
      if name.startswith(prefix + "/") or name == prefix + ":0":
        name = replacement + name[len(prefix):]
        break
    ours_by_name.pop(name).assign(variable)
  assert not ours_by_name, f"not copied: {sorted(ours_by_name)}"


def test_parity_with_model_garden(tiny_config, encoder_inputs):
  from official.nlp.modeling import networks
  garden = networks.AlbertEncoder(
      vocab_size=tiny_config.vocab_size,
      embedding_width=tiny_config.embedding_size,
      hidden_size=tiny_config.hidden_size,
      num_layers=tiny_config.num_hidden_layers,
      num_attention_heads=tiny_config.num_attention_heads,
      intermediate_size=tiny_config.intermediate_size,
      max_sequence_length=tiny_config.max_position_embeddings,
      type_vocab_size=tiny_config.type_vocab_size,
      initializer=tf_keras.initializers.TruncatedNormal(stddev=0.1),
      dropout_rate=0.0, attention_dropout_rate=0.0, dict_outputs=True)
  ours = AlbertEncoder(tiny_config)
  _copy_garden_weights(garden, ours)
  expected = garden(encoder_inputs)
  actual = ours(encoder_inputs)
  assert np.abs(expected["sequence_output"]).max() > 0.1  # not degenerate
  for key in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(actual[key], expected[key], atol=1e-5)


# --- Parity with a NumPy transcription of the official forward pass ----------


def _layer_norm(x, gamma, beta):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _gelu(x):
  return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _official_forward(config, w, inputs):
  """google-research/albert modeling.py in NumPy; `w(name)` gives weights."""
  ids, mask, types = (np.asarray(inputs[k]) for k in
                      ("input_word_ids", "input_mask", "input_type_ids"))
  seq = ids.shape[1]
  x = (w("embeddings/word_embeddings/embeddings")[ids]
       + w("embeddings/token_type_embeddings/embeddings")[types]
       + w("embeddings/position_embeddings")[:seq][None])
  x = _layer_norm(x, w("embeddings/layer_norm/gamma"),
                  w("embeddings/layer_norm/beta"))
  x = x @ w("embeddings/embedding_projection/kernel") + w(
      "embeddings/embedding_projection/bias")
  adder = (1.0 - mask[:, None, None, :]) * -10000.0  # (B, 1, 1, S)
  heads, size = config.num_attention_heads, config.head_size
  for layer in range(config.num_hidden_layers):
    group = int(layer * config.num_hidden_groups / config.num_hidden_layers)
    for inner in range(config.inner_group_num):
      owner = {kind: (f"group_{group}" if config.share_parameters in
                      ("all", kind) else f"layer_{layer}")
               for kind in ("attention", "ffn")}
      a = f"{owner['attention']}_inner_{inner}_attention/"
      f = f"{owner['ffn']}_inner_{inner}_ffn/"

      def proj(t, name, a=a):
        kernel = w(a + f"self_attention/{name}/kernel").reshape(
            -1, heads * size)
        bias = w(a + f"self_attention/{name}/bias").reshape(-1)
        out = t @ kernel + bias
        return out.reshape(t.shape[0], seq, heads, size).transpose(0, 2, 1, 3)

      q, k, v = proj(x, "query"), proj(x, "key"), proj(x, "value")
      scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + adder
      probs = np.exp(scores - scores.max(-1, keepdims=True))
      probs /= probs.sum(-1, keepdims=True)
      context = (probs @ v).transpose(0, 2, 1, 3).reshape(-1, seq,
                                                          heads * size)
      attn = context @ w(a + "self_attention/attention_output/kernel").reshape(
          heads * size, -1) + w(a + "self_attention/attention_output/bias")
      x = _layer_norm(x + attn, w(a + "layer_norm/gamma"),
                      w(a + "layer_norm/beta"))
      hidden = _gelu(x @ w(f + "intermediate/kernel")
                     + w(f + "intermediate/bias"))
      ffn = hidden @ w(f + "output/kernel") + w(f + "output/bias")
      x = _layer_norm(x + ffn, w(f + "layer_norm/gamma"),
                      w(f + "layer_norm/beta"))
  pooled = np.tanh(x[:, 0] @ w("pooler/kernel") + w("pooler/bias"))
  return x, pooled


@pytest.mark.parametrize("share,groups,inner", [
    ("all", 2, 2), ("all", 4, 1), ("attention", 2, 1), ("ffn", 1, 2),
    ("none", 1, 1)])
def test_parity_with_official_forward(tiny_config, encoder_inputs, share,
                                      groups, inner):
  config = dataclasses.replace(tiny_config, num_hidden_layers=4,
                               num_hidden_groups=groups, inner_group_num=inner,
                               share_parameters=share)
  encoder = AlbertEncoder(config)
  weights = {v.name[:-2]: v.numpy().astype(np.float64)
             for v in encoder.trainable_variables}
  used = set()

  def w(name):
    used.add(name)
    return weights[name]

  sequence, pooled = _official_forward(config, w, encoder_inputs)
  outputs = encoder(encoder_inputs)
  assert used == set(weights)  # every variable takes part
  np.testing.assert_allclose(outputs["sequence_output"], sequence, atol=1e-5)
  np.testing.assert_allclose(outputs["pooled_output"], pooled, atol=1e-5)


# --- Numerics, compilation, dropout, serialisation ---------------------------


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision(tiny_config, encoder_inputs, policy):
  full = AlbertEncoder(tiny_config)
  mixed = AlbertEncoder(tiny_config, dtype=policy)
  mixed.set_weights(full.get_weights())
  assert all(v.dtype == tf.float32 for v in mixed.weights)
  attention = mixed.get_layer("group_0_inner_0_attention").attention
  assert attention.compute_dtype == policy.split("_")[1]
  # Every softmax the call runs (layers/shared_block.py's) is float32.
  graph = tf.function(mixed).get_concrete_function(
      {k: tf.TensorSpec([None, None], tf.int32)
       for k in encoder_inputs}).graph
  softmaxes = [op for op in graph.get_operations() if op.type == "Softmax"]
  assert len(softmaxes) == tiny_config.num_hidden_layers
  assert {op.get_attr("T") for op in softmaxes} == {tf.float32}
  expected, actual = full(encoder_inputs), mixed(encoder_inputs)
  for key in ("sequence_output", "pooled_output"):
    assert actual[key].dtype == tf.float32
    tolerance = 0.02 if policy == "mixed_float16" else 0.1
    np.testing.assert_allclose(actual[key], expected[key], atol=tolerance)
  assert tf_keras.mixed_precision.global_policy().name == "float32"


def test_jit_compiled_forward_equals_eager(tiny_config, encoder_inputs):
  encoder = AlbertEncoder(tiny_config)
  eager = encoder(encoder_inputs)
  compiled = tf.function(lambda x: encoder(x), jit_compile=True)(
      {k: tf.constant(v) for k, v in encoder_inputs.items()})
  for key in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(compiled[key], eager[key], atol=1e-5)


def test_dropout_only_when_training(tiny_config, encoder_inputs):
  encoder = AlbertEncoder(dataclasses.replace(
      tiny_config, hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2))
  inference = [encoder(encoder_inputs)["sequence_output"] for _ in range(2)]
  np.testing.assert_array_equal(inference[0], inference[1])
  training = encoder(encoder_inputs, training=True)["sequence_output"]
  assert np.abs(training - inference[0]).max() > 1e-3


def test_padding_does_not_change_real_tokens(tiny_config, make_inputs):
  encoder = AlbertEncoder(tiny_config)
  inputs = make_inputs(batch_size=1, seq_length=10)
  inputs["input_mask"][:] = 1
  padded = {k: np.pad(v, [(0, 0), (0, 6)]) for k, v in inputs.items()}
  short = encoder(inputs)["sequence_output"]
  long = encoder(padded)["sequence_output"][:, :10]
  np.testing.assert_allclose(long, short, atol=1e-5)


def test_sequence_longer_than_positions_is_rejected(tiny_config, make_inputs):
  encoder = AlbertEncoder(tiny_config)
  with pytest.raises(ValueError, match=r"sequence length 41 exceeds "
                     r"max_position_embeddings \(40\)"):
    encoder(make_inputs(seq_length=41))


def test_get_config_round_trip(tiny_config, encoder_inputs):
  config = dataclasses.replace(tiny_config, num_hidden_layers=4,
                               num_hidden_groups=2, share_parameters="ffn")
  encoder = AlbertEncoder(config)
  clone = AlbertEncoder.from_config(encoder.get_config())
  assert clone.config == config
  clone.set_weights(encoder.get_weights())
  np.testing.assert_allclose(clone(encoder_inputs)["pooled_output"],
                             encoder(encoder_inputs)["pooled_output"],
                             atol=1e-6)


def test_pooled_output_computes_the_last_block_at_cls_only(tiny_config,
                                                          encoder_inputs):
  """Sentence-level heads read [CLS]: equal outputs and gradients."""
  from albert_tf.networks.albert_encoder import pooled_output
  encoder = AlbertEncoder(tiny_config)
  with tf.GradientTape(persistent=True) as tape:
    fast = pooled_output(encoder, encoder_inputs)
    full = encoder(encoder_inputs)["pooled_output"]
    fast_loss, full_loss = tf.reduce_sum(fast ** 3), tf.reduce_sum(full ** 3)
  assert fast.shape == (3, 32)
  np.testing.assert_allclose(fast, full, atol=1e-5)
  for v in encoder.trainable_variables:
    np.testing.assert_allclose(
        tf.convert_to_tensor(tape.gradient(fast_loss, v)),
        tf.convert_to_tensor(tape.gradient(full_loss, v)), atol=1e-5,
        err_msg=v.name)
