"""Writes `export_outputs.npz`: what the exports of the shared-layer
fixture's checkpoint return, for tests/albert_tf/models/
test_shared_layer_export_fixtures.py.

Run once on the code BEFORE issue 49's redesign (as write_fixtures.py),
from that tree's root, with this folder copied into it:

  PYTHONPATH=$PWD python tests/data/shared_layer/write_export_fixtures.py

From the checkpoint of write_fixtures.py (a tiny early-exit classifier of
3 layers; its exit heads replaced by centred_head's, kept in the file) it
writes, in a temporary folder, the encoder's SavedModel
export (export_savedmodel, a WordPiece vocabulary of the model's 40 ids)
and the classifier's (export_classifier at exit patience 1), converts both
to LiteRT float32 (export_tflite) and ONNX (export_onnx: the classifier at
full depth and with its exit loop), runs every file on write_fixtures'
inputs, and keeps only the outputs (a few KB; the files themselves are
rebuilt by the test from the same checkpoint with today's code).
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

from tests.data.shared_layer import write_fixtures

HERE = os.path.dirname(os.path.abspath(__file__))

OUTPUTS = os.path.join(HERE, "export_outputs.npz")
EXIT_PATIENCE = 1
KINDS = ("encoder", "classifier")


def vocabulary(path):
  """A WordPiece vocab.txt of the model's 40 ids (the exports' asset)."""
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  tokens += [f"w{i}" for i in range(write_fixtures.config_dict()[
      "vocab_size"] - len(tokens))]
  with tf.io.gfile.GFile(path, "w") as f:
    f.write("\n".join(tokens) + "\n")
  return path


def restored_model(head=None):
  """The fixture's classifier with the checkpoint's weights; `head`: the
  exit heads' (kernel [L, H, C], bias [L, C]) to use instead."""
  model = write_fixtures.build()
  tf.train.Checkpoint(model=model).read(os.path.join(
      HERE, "checkpoint", "model")).assert_consumed()
  if head is not None:
    model.head_kernel.assign(head[0])
    model.head_bias.assign(head[1])
  return model


def centred_head(model):
  """Exit heads whose classes differ between the inputs and the layers
  (the checkpoint's near-uniform heads never exit early): a kernel drawn
  from a fixed seed, the bias centring each layer's logits on the inputs'
  mean pooled vector. Examples 1 and 2 exit after layer 2, example 0 runs
  all 3 layers (patience 1)."""
  from albert_tf.networks import early_exit_encoder
  data = {k: tf.constant(v) for k, v in write_fixtures.inputs().items()}
  pooled = early_exit_encoder.per_layer_pooled(
      model.encoder, data, training=False).numpy()  # [batch, L, H]
  rng = np.random.RandomState(1)
  shape = model.head_kernel.shape
  kernel = 4.0 * (rng.normal(size=shape[1:]) + 0.6 * rng.normal(size=shape))
  bias = -np.einsum("lh,lhc->lc", pooled.mean(0), kernel)
  return kernel.astype(np.float32), bias.astype(np.float32)


def write_exports(model, folder, kind):
  """Writes the `kind` ("encoder" or "classifier") SavedModel export and
  its LiteRT and ONNX files into `folder`; returns {name: path}."""
  from albert_tf import AlbertConfig
  from albert_tf.exports.encoder import export_savedmodel
  from albert_tf.exports.litert.converter import export_tflite
  from albert_tf.exports.onnx.converter import export_onnx
  from albert_tf.exports.serving.classifier import export_classifier
  vocab = vocabulary(os.path.join(folder, "vocab.txt"))
  seq, batch = write_fixtures.SEQ, write_fixtures.BATCH
  export = os.path.join(folder, f"{kind}_export")
  if kind == "encoder":
    checkpoint = os.path.join(folder, "encoder_ckpt", "model")
    tf.train.Checkpoint(encoder=model.encoder).write(checkpoint)
    export_savedmodel(AlbertConfig.from_dict(write_fixtures.config_dict()),
                      checkpoint, None, export, seq_length=seq,
                      vocab_file=vocab)
    export = os.path.join(export, "encoder")
  else:
    export_classifier(model, export, "", ["a", "b", "c"], 1, seq,
                      vocab_file=vocab, exit_patience=EXIT_PATIENCE)
  paths = {kind: export, f"{kind}_litert": os.path.join(folder,
                                                        f"{kind}.tflite"),
           f"{kind}_onnx": os.path.join(folder, f"{kind}.onnx")}
  export_tflite(export, paths[f"{kind}_litert"], seq_length=seq,
                batch_size=batch)
  export_onnx(export, paths[f"{kind}_onnx"])
  if kind == "classifier":  # the exit loop as an ONNX Loop too
    paths["classifier_onnx_loop"] = os.path.join(folder, "loop.onnx")
    export_onnx(export, paths["classifier_onnx_loop"], exit_loop=True)
  return paths


def run_exports(paths):
  """The outputs of every export in `paths` (write_exports') on
  write_fixtures.inputs(): "<export>/<output>" -> array."""
  from albert_tf.exports import load_saved_model
  from albert_tf.exports.litert.interpreter import LiteRTModel
  from albert_tf.exports.onnx.runtime import OnnxModel
  inputs = write_fixtures.inputs()
  tensors = {k: tf.constant(v) for k, v in inputs.items()}
  out = {}

  def put(prefix, outputs):
    for key, value in outputs.items():
      out[f"{prefix}/{key}"] = np.asarray(value)

  for name, path in paths.items():
    if name == "encoder":
      signature = load_saved_model(path).signatures["serving_default"]
      put("savedmodel_encoder", {
          k: v for k, v in signature(**tensors).items()
          if k in ("sequence_output", "pooled_output")})
    elif name == "classifier":
      signatures = load_saved_model(path).signatures
      for key in ("token_ids", "token_ids_full_depth",
                  "token_ids_unbranched"):
        put(f"savedmodel_classifier_{key}", signatures[key](**tensors))
    elif name.endswith("_litert"):
      with tf.io.gfile.GFile(path, "rb") as f:
        put(name, LiteRTModel(f.read())(inputs))
    else:
      put(name, OnnxModel(path)(inputs))
  return out


def main():
  head = centred_head(restored_model())
  model = restored_model(head)
  outputs = {}
  for kind in KINDS:
    with tempfile.TemporaryDirectory() as folder:
      outputs.update(run_exports(write_exports(model, folder, kind)))
  outputs.update({"head/kernel": head[0], "head/bias": head[1]})
  np.savez_compressed(OUTPUTS, **outputs)
  print("\n".join(f"{k} {v.shape} {v.dtype}" for k, v in
                  sorted(outputs.items())))


if __name__ == "__main__":
  main()
