"""--runtime=onnx|litert: the ONNX or LiteRT file made from the export's
SavedModel runs in its place.

Where tools.predict looks, in the export folder (--model), and the command
that makes each (with the converter's description JSON and the export's
assets beside the file):

  onnx    <model>/onnx/model.onnx        python -m tools.export_onnx
          --saved_model=<model> --output_file=<model>/onnx/model.onnx
          [--quantize=dynamic_int8]
  litert  <model>/litert/model.tflite    python -m tools.export_tflite
          --saved_model=<model> --output_file=<model>/litert/model.tflite
          --seq_length=<the export's> --length_buckets=<its buckets>

(an export_savedmodel folder: --saved_model=<model>/encoder). The texts
are tokenized and packed in Python as fine-tuning packs them
(albert_tf.exports.text_runner.TextRunner, with the vocabulary beside the
file), the file runs (onnx.runtime.OnnxModel, litert.LiteRTModel), and the
outputs get the SavedModel's serving_default names, so the rows are the
SavedModel runtime's (exported_model.Predictor.named) to the file's
precision. ONNX batches run at their own longest row (own_length.py), as
the SavedModel's classifier and encoder exports; a LiteRT file (fixed
shapes) at its own buckets.

Served: every kind. NER's and SQuAD's raw-text steps (words, windows,
entities, answer spans and their character offsets), in-graph in the
SavedModel, run host-side around the file (converted_spans.py) with the
Python code fine-tuning uses for them and the windowing the export
recorded (ner_settings.json, squad_settings.json).

Imports no TensorFlow.
"""

import contextlib
import functools
import json
import threading
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.errors import UserInputError
from albert_tf.prediction import converted_spans
from albert_tf.prediction import exported_model
from albert_tf.prediction import own_length
from albert_tf.prediction.batching import bucket_of
from albert_tf.prediction.exported_model import ExportDescription
from data_pipeline.tasks import label_list as label_list_lib

FILES = {"onnx": ("onnx", "model.onnx"), "litert": ("litert", "model.tflite")}
# Our kinds -> the converter's (albert_tf.exports.serving_kinds).
_CONVERTED_KINDS = {"classifier": ("classifier",),
                    "regression": ("regression", "classifier"),
                    "multi_label": ("classifier", "multi_label"),
                    "multiple_choice": ("race",), "encoder": ("encoder",),
                    "ner": ("token_classification",),
                    "squad": ("squad", "squad_beam")}
# The settings file a kind's packing reads beside the file, and what the
# export records in it.
_SETTINGS = {"multiple_choice": ("choice_settings.json", "max_qa_length"),
             "ner": ("ner_settings.json", "doc_stride"),
             "squad": ("squad_settings.json", "doc_stride")}


def runtime_file(model: str, runtime: str) -> str:
  """The file --runtime reads in the export folder --model."""
  folder, name = FILES[runtime]
  return file_io.join(model, folder, name)


def _make_command(model: str, runtime: str,
                  description: ExportDescription) -> str:
  saved_model = (file_io.join(model, "encoder")
                 if description.kind == "encoder" else model)
  tool = "export_onnx" if runtime == "onnx" else "export_tflite"
  command = (f"python -m tools.{tool} --saved_model={saved_model} "
             f"--output_file={runtime_file(model, runtime)}")
  buckets = description.length_buckets
  if runtime == "litert" and buckets:
    command += f" --seq_length={buckets[-1]}"
    if len(buckets) > 1:
      command += f" --length_buckets={','.join(map(str, buckets))}"
  return command


def check_runtime(model: str, runtime: str,
                  description: ExportDescription) -> None:
  """Refuses a runtime the export cannot use, before anything is written.

  Raises:
    UserInputError: a kind the converted files do not serve, a missing
      file (naming it and the command that makes it), or an export that
      does not record what packing its file needs.
  """
  if runtime == "savedmodel":
    return
  if description.kind not in _CONVERTED_KINDS:
    raise UserInputError(
        f"--runtime={runtime} does not serve {description.kind} exports "
        f"(--model={model}): use --runtime=savedmodel")
  path = runtime_file(model, runtime)
  if not file_io.exists(path):
    raise UserInputError(
        f"--runtime={runtime}: {path} does not exist; make it with: "
        f"{_make_command(model, runtime, description)}")
  if not description.length_buckets:
    raise UserInputError(
        f"--runtime={runtime}: --model={model} does not record its "
        "seq_length (an export written before exports recorded it); "
        "export it again, or use --runtime=savedmodel")
  _settings(model, runtime, description)


def _settings(model: str, runtime: str,
              description: ExportDescription) -> Dict[str, Any]:
  """The packing settings the export recorded (_SETTINGS), read beside
  the file (the converters copy the export's assets there); {} for the
  kinds that need none.

  Raises:
    UserInputError: an export written before it recorded them.
  """
  if description.kind not in _SETTINGS:
    return {}
  name, key = _SETTINGS[description.kind]
  path = file_io.join(file_io.dirname(runtime_file(model, runtime)), name)
  exists = file_io.exists(path)
  settings = json.loads(file_io.read_text(path)) if exists else {}
  if key not in settings:
    problem = f"does not hold {key}" if exists else "does not exist"
    raise UserInputError(
        f"{path} {problem}: --model={model} does not record its "
        f"{key} (an export written before exports recorded it); export "
        "it again and make the file again, or use --runtime=savedmodel")
  return settings


def _read_json(path: str) -> Dict[str, Any]:
  if not file_io.exists(path):
    raise UserInputError(f"{path} does not exist (the converter writes it "
                         "beside the file)")
  return json.loads(file_io.read_text(path))


class ConvertedPredictor(exported_model.Predictor):
  """exported_model.Predictor on the export's ONNX or LiteRT file.

  Args:
    path: --model.
    description: exported_model.describe(path).
    embeddings: "pooled" or "mean" (encoder exports).
    runtime: "onnx" or "litert".
    num_threads: the runtime's CPU threads.
  """

  def __init__(self, path: str, description: ExportDescription,
               embeddings: str = "pooled", runtime: str = "onnx",
               num_threads: int = 2):
    from albert_tf.exports.text_runner import TextRunner
    check_runtime(path, runtime, description)
    self.description = description
    self.embeddings = embeddings
    self.runtime = runtime
    model_file = runtime_file(path, runtime)
    # model.onnx -> model.json, as both converters name it.
    converted = _read_json(model_file.rsplit(".", 1)[0] + ".json")
    seq_length = description.length_buckets[-1]
    if converted["kind"] not in _CONVERTED_KINDS[description.kind]:
      raise UserInputError(
          f"{model_file} is a {converted['kind']} model, --model={path} a "
          f"{description.kind} export; make it again: "
          f"{_make_command(path, runtime, description)}")
    if runtime == "onnx":
      from albert_tf.exports.onnx.runtime import OnnxModel
      model = OnnxModel(file_io.read_bytes(model_file), num_threads)
    else:
      from albert_tf.exports.litert.interpreter import LiteRTModel
      model = LiteRTModel(file_io.read_bytes(model_file), num_threads)
      if model.seq_length != seq_length:
        raise UserInputError(
            f"{model_file} takes {model.seq_length} tokens, --model={path} "
            f"{seq_length}; make it again: "
            f"{_make_command(path, runtime, description)}")
    self.model = model
    # A LiteRT interpreter is not thread-safe (an ONNX Runtime session
    # is): Beam's worker threads share one predictor (beam_handler.py), so
    # its calls take turns; each runs on its own num_threads.
    self._lock = (threading.Lock() if runtime == "litert"
                  else contextlib.nullcontext())
    asset_dir = file_io.dirname(model_file)
    self.runner = TextRunner(model, converted, asset_dir,
                             seq_length=seq_length)
    self.settings = _settings(path, runtime, description)
    self.max_qa_length = self.settings.get("max_qa_length")
    self.ner_labels = (label_list_lib.read(asset_dir)
                       if description.kind == "ner" else None)

  @property
  def own_length(self) -> bool:
    """ONNX runs each batch at its longest row (_run; the batching may cross
    buckets), LiteRT at its buckets."""
    return self.runtime == "onnx"

  def _run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The file on packed inputs ([n, (C,) seq_length]); ONNX cut to the
    batch's longest row, at most its bucket (own_length.padded_length:
    the file takes any length), LiteRT at its own buckets."""
    if self.own_length:
      longest = int(np.max(np.sum(inputs[INPUT_MASK], -1), initial=1))
      length = own_length.padded_length(
          longest, bucket_of(longest, self.description.length_buckets))
      inputs = {k: v[..., :length] for k, v in inputs.items()}
    with self._lock:
      outputs = dict(self.model(inputs))
    outputs[INPUT_MASK] = inputs[INPUT_MASK]
    return outputs

  def raw_outputs(self, texts_a: Sequence[str],
                  texts_b: Optional[Sequence[str]] = None,
                  choices: Optional[Sequence[Sequence[str]]] = None
                 ) -> Dict:
    """The SavedModel's serving_default outputs, from the file."""
    kind, labels = self.kind, self.runner.labels
    if kind == "ner":
      return converted_spans.ner_outputs(
          self._run, self.runner.tokenizer, self.ner_labels,
          int(self.settings["seq_length"]), int(self.settings["doc_stride"]),
          list(texts_a))
    if kind == "squad":  # text_a: the contexts, text_b: the questions
      return converted_spans.squad_outputs(self._run, self.runner,
                                           list(texts_a), list(texts_b))
    if kind == "multiple_choice":
      outputs = self._run(self.runner.choice_inputs(
          list(texts_a), list(texts_b), [list(c) for c in choices],
          self.max_qa_length))
      index = np.argmax(outputs["logits"], -1)
      outputs["answer_index"] = index
      outputs["choice"] = np.array([c[i].encode("utf-8")
                                    for c, i in zip(choices, index)])
      if self.description.choice_inputs[2] == "options":  # RACE's letters
        outputs["answer"] = np.array([b"ABCD"[i:i + 1] for i in index])
      return outputs
    outputs = self._run(self.runner.classify_inputs(
        list(texts_a), None if texts_b is None else list(texts_b)))
    if kind == "regression":
      outputs["score"] = outputs["predictions"].reshape(-1)
    elif kind == "classifier":
      outputs["label"] = np.array([labels[i].encode("utf-8") for i in
                                   np.argmax(outputs["probabilities"], -1)])
    elif kind == "multi_label":
      threshold = self.runner.label_list.threshold
      threshold = 0.5 if threshold is None else threshold
      names = np.array([n.encode("utf-8") for n in labels])
      outputs["labels"] = np.where(outputs["probabilities"] > threshold,
                                   names[None, :], b"")
    return outputs


def loader(model: str, runtime: str, description: ExportDescription
          ) -> Callable:
  """The predictor class of --runtime, checked first (check_runtime):
  (model, description, embeddings) -> an object with `predict`."""
  check_runtime(model, runtime, description)
  if runtime == "savedmodel":
    return exported_model.Predictor
  return functools.partial(ConvertedPredictor, runtime=runtime)
