"""keras-hub's own AlbertTextClassifier, for tests of task presets.

Run as `python tests/scripts/keras_hub_tasks_script.py SETTINGS_JSON OUT_JSON`
(Keras 3 only: nothing here imports tf_keras or albert_tf). It

  1. builds keras-hub AlbertTextClassifier / AlbertMaskedLM models on a tiny
     AlbertBackbone with seeded random weights and saves them with
     `save_to_preset` (the files a keras-hub user has), with their logits
     on the given ids;
  2. loads the preset our converter wrote (settings' "ours_preset", when
     given) with `AlbertTextClassifier.from_preset` and gives its logits.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402


def run(settings, tmp_path):
  """Runs this script in a subprocess; its JSON result."""
  import subprocess
  out = os.path.join(str(tmp_path), "keras_hub_tasks.json")
  process = subprocess.run(
      [sys.executable, os.path.abspath(__file__), json.dumps(settings), out],
      check=False, capture_output=True, text=True, timeout=900)
  assert process.returncode == 0, process.stderr[-3000:]
  with open(out, encoding="utf-8") as f:
    return json.load(f)


def _randomize(model, seed):
  """Every weight moved by N(0, 0.05) (biases and LayerNorm betas not 0)."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(np.asarray(v.numpy()) +
             rng.normal(0.0, 0.05, size=v.shape).astype("float32"))


def _inputs(settings):
  ids = np.load(settings["ids"])
  return {"token_ids": ids["input_word_ids"],
          "segment_ids": ids["input_type_ids"],
          "padding_mask": ids["input_mask"]}


def main():
  settings, out_path = json.loads(sys.argv[1]), sys.argv[2]
  import keras_hub

  with open(settings["spm_model"], "rb") as f:
    proto = f.read()
  inputs = _inputs(settings)
  out = {}

  def backbone(seed):
    model = keras_hub.models.AlbertBackbone(dtype="float32",
                                            **settings["backbone"])
    _randomize(model, seed)
    return model

  def preprocessor():
    return keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=proto),
        sequence_length=settings["seq"])

  for name, activation in (("classifier", None), ("softmax", "softmax"),
                           ("sigmoid", "sigmoid")):
    task = keras_hub.models.AlbertTextClassifier(
        backbone(1), num_classes=settings["num_classes"],
        preprocessor=preprocessor(), activation=activation)
    _randomize(task.output_dense, 2)
    task.save_to_preset(settings["presets"][name])
    out[f"{name}_logits"] = np.asarray(task(inputs)).tolist()
  masked_lm = keras_hub.models.AlbertMaskedLM(
      backbone(3), preprocessor=keras_hub.models.AlbertMaskedLMPreprocessor(
          keras_hub.models.AlbertTokenizer(proto=proto),
          sequence_length=settings["seq"]))
  masked_lm(dict(inputs, mask_positions=np.zeros((len(inputs["token_ids"]),
                                                  1), "int32")))
  masked_lm.save_to_preset(settings["presets"]["masked_lm"])

  # Ours -> preset: keras-hub's own class loads it, head and preprocessor.
  if settings.get("ours_preset"):
    out.update(_load_ours(keras_hub, settings, inputs))
  with open(out_path, "w", encoding="utf-8") as f:
    json.dump(out, f)


def _load_ours(keras_hub, settings, inputs):
  out = {}
  loaded = keras_hub.models.AlbertTextClassifier.from_preset(
      settings["ours_preset"])
  out["ours_preset_logits"] = np.asarray(loaded(inputs)).tolist()
  out["ours_preset_num_classes"] = loaded.num_classes
  out["ours_preset_preprocessor"] = type(loaded.preprocessor).__name__
  out["ours_preset_predict"] = np.asarray(loaded.predict(
      settings["texts"], verbose=0)).tolist()
  return out


if __name__ == "__main__":
  main()
