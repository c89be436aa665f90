"""The paths the serving benchmark (runtimes.py) compares: one ALBERT
encoder with random weights exported once, its LiteRT and ONNX files
converted from that export, and a call per contender on token ids."""

import os
from typing import Callable, Dict

import numpy as np

from benchmarks import common

TINY = dict(vocab_size=2000, embedding_size=16, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=128)
SEQ = 128


def _config(size: str):
  from albert_tf.config import AlbertConfig
  if size == "tiny":
    return AlbertConfig(**TINY)
  return common.load_config(size)


def build_exports(size: str, work: str) -> Dict:
  """The encoder export, its LiteRT and ONNX files and the layers-only
  encoder on the same weights."""
  import tensorflow as tf
  import tf_keras

  from albert_tf import exports
  from albert_tf.exports.litert import converter as litert
  from albert_tf.exports.onnx.converter import OnnxConversion
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = _config(size)
  tf_keras.utils.set_random_seed(0)
  encoder = AlbertEncoder(config)
  rng = np.random.default_rng(0)
  for v in encoder.weights:
    v.assign(v + rng.normal(0.0, 0.02, v.shape).astype(np.float32))
  layers = AlbertEncoder(config, fused_inference=False)
  layers.set_weights(encoder.get_weights())
  vocab = os.path.join(work, "vocab.txt")
  with open(vocab, "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                      [f"w{i}" for i in range(95)]) + "\n")
  checkpoint = tf.train.Checkpoint(encoder=encoder).write(
      os.path.join(work, "ckpt", "ckpt"))
  exports.export_savedmodel(config, checkpoint, None,
                            os.path.join(work, "export"), vocab_file=vocab,
                            seq_length=SEQ)
  saved_model = os.path.join(work, "export", "encoder")
  built = dict(config=config, saved_model=saved_model, layers=layers)
  for quantize in ("none", "dynamic_int8"):
    for batch, buckets in ((1, "auto"), (32, "none")):
      path = os.path.join(work, f"{quantize}_{batch}.tflite")
      litert.export_tflite(saved_model, path, seq_length=SEQ,
                           batch_size=batch, quantize=quantize,
                           length_buckets=buckets)
      built[f"tflite_{quantize}_{batch}"] = path
  conversion = OnnxConversion(saved_model)
  built["onnx_none"] = conversion.serialized("none")
  built["onnx_dynamic_int8"] = conversion.serialized("dynamic_int8")
  built["sizes"] = {"onnx float32": len(built["onnx_none"]),
                    "onnx int8": len(built["onnx_dynamic_int8"]),
                    "float32 weights": conversion.weight_bytes}
  return built


def contenders(built: Dict, threads: int) -> Dict[str, Callable]:
  """name -> f(inputs: dict of int32 arrays) -> outputs read back, or None
  where the contender cannot take the shape."""
  import tensorflow as tf

  from albert_tf.exports import load_saved_model
  from albert_tf.exports.litert.interpreter import LiteRTModel
  from albert_tf.exports.onnx.runtime import OnnxModel
  signature = load_saved_model(built["saved_model"]).signatures[
      "serving_default"]
  spec = {name: tf.TensorSpec([None, None], tf.int32, name=name)
          for name in ("input_word_ids", "input_mask", "input_type_ids")}
  layers = tf.function(lambda x: built["layers"](x, training=False),
                       input_signature=[spec])

  def tf_call(function, keyword):
    def call(inputs):
      tensors = {k: tf.constant(v) for k, v in inputs.items()}
      out = function(**tensors) if keyword else function(tensors)
      return {k: v.numpy() for k, v in out.items()
              if k in ("pooled_output", "sequence_output")}
    return call

  def litert_call(quantize):
    models = {b: LiteRTModel(open(built[f"tflite_{quantize}_{b}"],
                                  "rb").read(), threads) for b in (1, 32)}

    def call(inputs):
      batch, seq = inputs["input_mask"].shape
      if seq != SEQ and seq not in models[1].buckets:
        return None  # fixed shapes: an unpadded request cannot run
      padded = {k: np.pad(v, [(0, 0), (0, SEQ - seq)])
                for k, v in inputs.items()}
      return models[32 if batch == 32 else 1](padded)
    return call

  calls = {"TF SavedModel encoder": tf_call(signature, True),
           "TF encoder, layers' ops (before #34)": tf_call(layers, False),
           "LiteRT float32": litert_call("none"),
           "LiteRT dynamic int8": litert_call("dynamic_int8")}
  for quantize, label in (("none", "float32"), ("dynamic_int8", "int8")):
    for spinning in (True, False):
      model = OnnxModel(built[f"onnx_{quantize}"], threads, spinning)
      name = f"ORT {label}" + ("" if spinning else ", no spinning")
      calls[name] = model
  return calls
