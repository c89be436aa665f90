"""Keras 3 halves of tests that need `import keras` (not tf_keras).

Run as `python tests/keras3_script.py COMMAND SETTINGS_JSON OUT_JSON`; the
measurements go to OUT_JSON for the calling test (which runs in a tf_keras
process) to assert on. Commands: see COMMANDS at the end.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

import numpy as np  # noqa: E402


def _max_diff(a, b) -> float:
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def tfsm_export(settings):
  """TFSMLayer over <export>/encoder and /preprocessor: outputs, dropout,
  fine-tuning with Adam."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from albert_tf.keras3 import saved_model_layers  # pylint: disable=g-import-not-at-top

  encoder_path = os.path.join(settings["export_dir"], "encoder")
  preprocessor_path = os.path.join(settings["export_dir"], "preprocessor")
  expected = np.load(settings["expected"])
  inputs = {k: expected[k] for k in ("input_word_ids", "input_mask",
                                     "input_type_ids")}
  out = {}

  # 1. Plain keras.layers.TFSMLayer, default endpoint, in a functional model.
  symbolic = {k: keras.Input(shape=(None,), dtype="int32", name=k)
              for k in inputs}
  plain = keras.layers.TFSMLayer(encoder_path)
  outputs = plain(symbolic)
  model = keras.Model(symbolic, {"sequence_output": outputs["sequence_output"],
                                 "pooled_output": outputs["pooled_output"]})
  result = model.predict(inputs, verbose=0)
  out["functional_sequence_diff"] = _max_diff(result["sequence_output"],
                                              expected["sequence_output"])
  out["functional_pooled_diff"] = _max_diff(result["pooled_output"],
                                            expected["pooled_output"])
  serving = keras.layers.TFSMLayer(encoder_path,
                                   call_endpoint="serving_default")
  out["serving_default_pooled_diff"] = _max_diff(
      serving(inputs)["pooled_output"], expected["pooled_output"])
  out["encoder_outputs_len"] = len(serving(inputs)["encoder_outputs"])

  # 2. Dropout: off at inference, on (and random) in training.
  encoder = saved_model_layers.encoder_layer(encoder_path)
  infer = [encoder(inputs, training=False)["sequence_output"]
           for _ in range(2)]
  train = [encoder(inputs, training=True)["sequence_output"]
           for _ in range(2)]
  out["inference_repeat_diff"] = _max_diff(infer[0], infer[1])
  out["inference_vs_expected_diff"] = _max_diff(infer[0],
                                                expected["sequence_output"])
  out["training_vs_inference_diff"] = _max_diff(train[0], infer[0])
  out["training_repeat_diff"] = _max_diff(train[0], train[1])

  # 3. The preprocessor on raw strings equals the tf_keras process's.
  preprocess = saved_model_layers.preprocessor_layer(preprocessor_path)
  ids = preprocess(tf.constant(settings["sentences"]))["input_word_ids"]
  out["preprocessor_ids_equal"] = bool(
      np.array_equal(ids, expected["sentence_ids"]))
  pair = saved_model_layers.preprocessor_layer(preprocessor_path,
                                               two_segments=True)
  packed = pair({"text_a": tf.constant(settings["sentences"][:1]),
                 "text_b": tf.constant(settings["sentences"][1:2])})
  out["pair_type_ids_max"] = int(np.max(packed["input_type_ids"]))

  # 4. Fine-tuning from raw text with Adam (the documented route).
  keras.utils.set_random_seed(0)
  text = keras.Input(shape=(), dtype="string")
  pooled = encoder(preprocess(text))["pooled_output"]
  classifier = keras.Model(text, keras.layers.Dense(2)(pooled))
  classifier.compile(
      optimizer=keras.optimizers.Adam(settings["learning_rate"]),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  before = [w.numpy().copy() for w in encoder.trainable_weights]
  data = tf.data.Dataset.from_tensor_slices(
      (settings["texts"], settings["labels"])).batch(8)
  history = classifier.fit(data, epochs=settings["epochs"], verbose=0)
  out["losses"] = [float(x) for x in history.history["loss"]]
  out["encoder_weight_change"] = max(
      _max_diff(w.numpy(), b) for w, b in zip(encoder.trainable_weights,
                                               before))
  out["num_trainable"] = len(encoder.trainable_weights)

  # 5. The Keras bug the wrapper works around (recorded, for the README).
  bug = keras.Model(symbolic, keras.layers.Dense(2)(
      keras.layers.TFSMLayer(encoder_path)(symbolic)["pooled_output"]))
  bug.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(
                  from_logits=True))
  try:
    bug.fit(inputs, np.zeros(len(inputs["input_mask"]), np.int32),
            verbose=0)
    out["plain_tfsm_adam_error"] = None
  except ValueError as e:
    out["plain_tfsm_adam_error"] = str(e)[:200]
  return out


COMMANDS = {"tfsm_export": tfsm_export}


def main():
  command, settings, out_path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
  result = COMMANDS[command](settings)
  with open(out_path, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=2)


if __name__ == "__main__":
  main()
