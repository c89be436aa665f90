"""Shared pieces of the checkpoint conversion tests (test_checkpoint_
conversion.py, test_checkpoint_round_trips.py, test_checkpoint_failures.py):
the official modeling.py variable shapes, a TF1 checkpoint written under
them, and small model helpers.

The TF1 checkpoints here are written by the tests themselves with
tf.compat.v1 Variables and a Saver, under the names google-research/albert's
modeling.py creates (listed independently of the library's name tables).
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import converter


def official_shapes(config, heads=True):
  """name -> shape of the official modeling.py variables (+ heads)."""
  v, e, h, i = (config.vocab_size, config.embedding_size, config.hidden_size,
                config.intermediate_size)
  shapes = {"bert/embeddings/word_embeddings": (v, e),
            "bert/embeddings/token_type_embeddings":
                (config.type_vocab_size, e),
            "bert/embeddings/position_embeddings":
                (config.max_position_embeddings, e),
            "bert/embeddings/LayerNorm/gamma": (e,),
            "bert/embeddings/LayerNorm/beta": (e,),
            "bert/encoder/embedding_hidden_mapping_in/kernel": (e, h),
            "bert/encoder/embedding_hidden_mapping_in/bias": (h,),
            "bert/pooler/dense/kernel": (h, h),
            "bert/pooler/dense/bias": (h,)}
  for g in range(config.num_hidden_groups):
    for k in range(config.inner_group_num):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
      for name in ("query", "key", "value"):
        shapes[p + f"attention_1/self/{name}/kernel"] = (h, h)
        shapes[p + f"attention_1/self/{name}/bias"] = (h,)
      shapes[p + "attention_1/output/dense/kernel"] = (h, h)
      shapes[p + "attention_1/output/dense/bias"] = (h,)
      shapes[p + "ffn_1/intermediate/dense/kernel"] = (h, i)
      shapes[p + "ffn_1/intermediate/dense/bias"] = (i,)
      shapes[p + "ffn_1/intermediate/output/dense/kernel"] = (i, h)
      shapes[p + "ffn_1/intermediate/output/dense/bias"] = (h,)
      for norm in ("LayerNorm", "LayerNorm_1"):
        shapes[p + f"{norm}/gamma"] = (h,)
        shapes[p + f"{norm}/beta"] = (h,)
  if heads:
    shapes.update({"cls/predictions/transform/dense/kernel": (h, e),
                   "cls/predictions/transform/dense/bias": (e,),
                   "cls/predictions/transform/LayerNorm/gamma": (e,),
                   "cls/predictions/transform/LayerNorm/beta": (e,),
                   "cls/predictions/output_bias": (v,),
                   "cls/seq_relationship/output_weights": (2, h),
                   "cls/seq_relationship/output_bias": (2,)})
  return shapes


def write_tf1_checkpoint(prefix, shapes, seed=0, with_optimizer=True,
                         name_prefix=""):
  """Random weights under `shapes` names, as the official TF1 trainer saves."""
  rng = np.random.default_rng(seed)
  values = {n: rng.normal(0.0, 0.2, size=s).astype(np.float32)
            for n, s in shapes.items()}
  graph = tf.Graph()
  with graph.as_default():
    var_list = {}
    for name, value in values.items():
      var_list[name_prefix + name] = tf.compat.v1.Variable(value, name=name)
      if with_optimizer:
        for slot in ("adam_m", "adam_v"):
          var_list[f"{name_prefix}{name}/{slot}"] = tf.compat.v1.Variable(
              np.zeros_like(value), name=f"{name}/{slot}")
    if with_optimizer:
      var_list["global_step"] = tf.compat.v1.Variable(
          np.int64(1000), name="global_step")
    saver = tf.compat.v1.train.Saver(var_list=var_list)
    with tf.compat.v1.Session(graph=graph) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      saver.save(sess, prefix, write_meta_graph=False)
  return values


def config_with(tiny_config, **kwargs):
  """`tiny_config` with `kwargs` replaced."""
  return dataclasses.replace(tiny_config, **kwargs)


def randomize(model, seed=1):
  """Every weight of `model` drawn from N(0, 0.2) (seeded)."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.2, size=v.shape).astype(np.float32))


def assert_same_weights(a, b):
  """`a` and `b` hold the same variables (canonical names), equal."""
  va, vb = converter.canonical_variables(a), converter.canonical_variables(b)
  assert sorted(va) == sorted(vb)
  for name in va:
    np.testing.assert_array_equal(va[name].numpy(), vb[name].numpy(),
                                  err_msg=name)
