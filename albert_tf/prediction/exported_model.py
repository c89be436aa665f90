"""What an export is, read from the export itself, and its predict function.

`describe(path)` tells the kind without TensorFlow, from the signatures in
saved_model.pb (albert_tf.saved_model_inspection) and the label list in
the export's assets (data_pipeline.tasks.label_list):

  kind         the export                         serving_default outputs
  classifier   run_classifier --export_dir        `label` (own data) or
                                                  `labels` + `label_ids` (GLUE)
  regression   the same, a regression task        `score` or `predictions`
  multi_label  the same, --task_type=multi_label  `labels` [batch, C]
  ner          run_ner --export_dir               `entity_*`
  squad        run_squad --export_dir             `answer`, `start`, `end`
  multiple_choice  run_multiple_choice / run_race  `choice` / `option`,
               --export_dir                       `answer_index`
  encoder      export_savedmodel's folder         (encoder/ + preprocessor/)

`length_buckets(path)` reads the length buckets the export recorded (the
asset length_buckets.json; () for an export written before exports
recorded them): the in-process batching (batching.py) and Beam's model
handler both batch at them.

`load(model, description, embeddings)` gives a `Predictor`: texts in, one
output dict per text out, under plain names (`label`, `probabilities` by
label name, `value`, `labels`, `entities`, `answer` with `start` and `end`,
`embedding`; multiple choice: `choice` (the chosen choice's text),
`choice_index` and `probabilities`, one per choice, RACE also `answer`,
the letter). It calls the
export's own `serving_default` (the encoder: its preprocessor, then the
encoder), so what it returns is what the export serves; the export's
length buckets apply inside it. Classifier, regression, multi-label and
encoder exports are fed token ids instead, each batch padded to its own
longest row rather than to its bucket (own_length.py: the same packing,
model and outputs, to float rounding); `Predictor.own_length` says so to
the batching, whose batches then may cross a bucket.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf import saved_model_inspection as inspection
from albert_tf.prediction import own_length
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks import length_buckets as length_buckets_lib

KINDS = ("classifier", "regression", "multi_label", "ner", "squad",
         "multiple_choice", "encoder")
# serving_default's (context, question, choices) inputs: own, RACE.
CHOICE_INPUTS = (("context", "question", "choices"),
                 ("article", "question", "options"))


@dataclasses.dataclass(frozen=True)
class ExportDescription:
  """An export as tools.predict sees it.

  Attributes:
    kind: one of KINDS.
    pair: serving_default takes `text_a` and `text_b` (a sentence-pair
      model; the encoder's preprocessor takes either; SQuAD: the context
      is text_a, the question text_b).
    labels: label names in logit order (classifier, multi_label), else ().
    length_buckets: the export's recorded buckets (length_buckets), () when
      it recorded none.
    num_choices: multiple choice: the choices of a question, else 0.
    choice_inputs: multiple choice: serving_default's (context, question,
      choices) input names (CHOICE_INPUTS), else ().
  """
  kind: str
  pair: bool
  labels: Tuple[str, ...] = ()
  length_buckets: Tuple[int, ...] = ()
  num_choices: int = 0
  choice_inputs: Tuple[str, ...] = ()


def _labels(path: str) -> Tuple[str, ...]:
  """Label names in logit order: labels.json, else labels.txt."""
  assets = file_io.join(path, "assets")
  saved = label_list_lib.read(assets)
  if saved is not None:
    return tuple(saved.labels)
  text_file = file_io.join(assets, "labels.txt")
  if file_io.exists(text_file):
    return tuple(file_io.read_text(text_file).splitlines())
  return ()


def _is_encoder_export(path: str) -> bool:
  """export_savedmodel's folder (encoder/ and preprocessor/)."""
  return (not inspection.is_saved_model(path) and
          inspection.is_saved_model(file_io.join(path, "encoder")) and
          inspection.is_saved_model(file_io.join(path, "preprocessor")))


def length_buckets(path: str) -> Tuple[int, ...]:
  """The length buckets the export at `path` (--model) serves at:
  increasing token counts ending with its seq_length (one: no bucketing),
  as its raw-text signature cuts a batch to the smallest holding the
  batch's longest row. () for an export written before exports recorded
  them (their batches are cut by rows alone, as before).

  The one place readers of an export (tools.predict's batching, its Beam
  model handler) learn the buckets; no TensorFlow.

  Raises:
    UserInputError: a record that is not a list of increasing lengths.
  """
  assets = file_io.join(file_io.join(path, "preprocessor") if
                        _is_encoder_export(path) else path, "assets")
  return length_buckets_lib.read_export_record(assets) or ()


def describe(path: str) -> ExportDescription:
  """The kind of the export at `path` (--model).

  Raises:
    UserInputError: not a SavedModel, or a kind tools.predict does not
      serve yet, naming what it is.
  """
  description = _describe(path)
  return dataclasses.replace(description, length_buckets=length_buckets(path))


def _describe(path: str) -> ExportDescription:
  """describe, without the buckets."""
  if _is_encoder_export(path):
    return ExportDescription("encoder", pair=False)
  inspection.check_model_savedmodel(path, "--model")
  signatures = inspection.read_signatures(path)
  if "serving_default" not in signatures:
    raise UserInputError(f"--model={path} has no serving_default signature")
  inputs, outputs = signatures["serving_default"]
  if inputs in (["sentences"], ["text_a", "text_b"]):
    pair = inputs != ["sentences"]
    if "score" in outputs or "predictions" in outputs:
      return ExportDescription("regression", pair)
    if "label" in outputs or "label_ids" in outputs:
      return ExportDescription("classifier", pair, _labels(path))
    if "labels" in outputs:
      return ExportDescription("multi_label", pair, _labels(path))
  if inputs == ["text"] and "entity_label" in outputs:
    return ExportDescription("ner", pair=False)
  if inputs == ["context", "question"] and "answer" in outputs:
    return ExportDescription("squad", pair=True)
  for names in CHOICE_INPUTS:
    if inputs == sorted(names) and "answer_index" in outputs:
      shape = inspection.input_shapes(path)[names[2]]
      return ExportDescription("multiple_choice", pair=True,
                               num_choices=int(shape[-1]),
                               choice_inputs=names)
  if sorted(inputs) == sorted(ENCODER_INPUT_NAMES):
    raise UserInputError(
        f"--model={path} is an encoder SavedModel; pass the export folder "
        f"holding it and its preprocessor ({file_io.dirname(path)})")
  raise UserInputError(
      f"--model={path}: tools.predict does not serve this export yet "
      f"(serving_default({', '.join(inputs)}) -> {', '.join(outputs)}); "
      "it serves classifier, regression, multi-label, NER, SQuAD, "
      "multiple-choice and encoder exports")


def _strings(tensor) -> List[str]:
  return [v.decode("utf-8") for v in tensor.numpy().reshape(-1)]


class Predictor:
  """An export's predict function: texts -> one output dict per text.

  Args:
    path: --model.
    description: describe(path).
    embeddings: "pooled" or "mean" (encoder exports).
  """

  def __init__(self, path: str, description: ExportDescription,
               embeddings: str = "pooled"):
    from albert_tf.exports.saved_model_loading import load_saved_model
    self.description = description
    self.embeddings = embeddings
    # The function fed token ids ([batch, length] int32 encoder inputs,
    # cut to the batch's longest row), when the export allows it
    # (own_length.py); None: serving_default on the texts.
    self.model_call = None
    if description.kind == "encoder":
      self._preprocessor = load_saved_model(file_io.join(path,
                                                         "preprocessor"))
      self._encoder = load_saved_model(file_io.join(path, "encoder"))
      self.model_call = self._encoder.signatures["serving_default"]
    else:
      self._loaded = load_saved_model(path)
      self._serve = self._loaded.signatures["serving_default"]
      if own_length.can_feed_token_ids(self._loaded, description.kind):
        self.model_call = self._loaded.signatures[own_length.TOKEN_IDS]
        self._pack = own_length.packer(self._loaded, description.pair,
                                       description.length_buckets)
        saved = label_list_lib.read(file_io.join(path, "assets"))
        self._threshold = saved.threshold if saved is not None else None

  @property
  def kind(self) -> str:
    return self.description.kind

  @property
  def own_length(self) -> bool:
    """Each batch runs at its own longest row (fed token ids, own_length.py),
    not at its bucket: the batching may cross buckets
    (batching.batches)."""
    return self.model_call is not None

  def raw_outputs(self, texts_a: Sequence[str],
                  texts_b: Optional[Sequence[str]] = None,
                  choices: Optional[Sequence[Sequence[str]]] = None
                 ) -> Dict:
    """serving_default's outputs (numpy) for a batch of texts (multiple
    choice: contexts, questions and each question's choices)."""
    import tensorflow as tf
    a = tf.constant(list(texts_a), tf.string)
    if self.kind == "multiple_choice":
      context, question, choice = self.description.choice_inputs
      outputs = self._serve(**{
          context: a, question: tf.constant(list(texts_b), tf.string),
          choice: tf.constant([list(c) for c in choices], tf.string)})
    elif self.kind == "encoder":
      if texts_b is None:
        inputs = self._preprocessor.signatures["serving_default"](
            sentences=a)
      else:
        inputs = self._preprocessor.signatures["two_segments"](
            text_a=a, text_b=tf.constant(list(texts_b), tf.string))
      inputs = own_length.cut_to_longest(inputs)
      outputs = self.model_call(**inputs)
      outputs = {k: outputs[k] for k in ("pooled_output",
                                         "sequence_output")}
      outputs["input_mask"] = inputs["input_mask"]
    elif self.model_call is not None:  # own_length.py
      texts = (a,) if texts_b is None else (
          a, tf.constant(list(texts_b), tf.string))
      outputs = self.model_call(**self._pack(*texts))
      return own_length.serving_outputs(
          self.kind, {k: v.numpy() for k, v in outputs.items()},
          self.description.labels, self._threshold)
    elif self.kind == "ner":
      outputs = self._serve(text=a)
    elif self.kind == "squad":
      outputs = self._serve(context=a,
                            question=tf.constant(list(texts_b), tf.string))
    elif self.description.pair:
      outputs = self._serve(text_a=a,
                            text_b=tf.constant(list(texts_b), tf.string))
    else:
      outputs = self._serve(sentences=a)
    return {k: v.numpy() for k, v in outputs.items()}

  def predict(self, texts_a: Sequence[str],
              texts_b: Optional[Sequence[str]] = None,
              choices: Optional[Sequence[Sequence[str]]] = None
             ) -> List[Dict[str, Any]]:
    """One dict of plain-named predictions per text (module docstring)."""
    if self.kind == "multiple_choice":
      return self.named(self.raw_outputs(texts_a, texts_b, choices),
                        texts_a)
    return self.named(self.raw_outputs(texts_a, texts_b), texts_a)

  def named(self, outputs: Dict, texts_a: Sequence[str]
           ) -> List[Dict[str, Any]]:
    """serving_default's outputs -> plain-named rows."""
    kind, labels = self.kind, self.description.labels
    if kind == "regression":
      values = outputs.get("score", outputs.get("predictions"))
      return [{"value": float(v)} for v in values]
    if kind in ("classifier", "multi_label"):
      named = [{n: float(p) for n, p in zip(labels, row)}
               for row in outputs["probabilities"]]
      if kind == "classifier":
        names = outputs.get("label", outputs.get("labels"))
        return [{"label": name.decode("utf-8"), "probabilities": p}
                for name, p in zip(names, named)]
      return [{"labels": [n.decode("utf-8") for n in names if n],
               "probabilities": p}
              for names, p in zip(outputs["labels"], named)]
    if kind == "ner":
      rows = []
      for i, text in enumerate(texts_a):
        entities = []
        for label, start, end, score in zip(
            outputs["entity_label"][i], outputs["entity_start"][i],
            outputs["entity_end"][i], outputs["entity_score"][i]):
          if not label:
            continue
          entities.append({"label": label.decode("utf-8"),
                           "start": int(start), "end": int(end),
                           "text": text[int(start):int(end)],
                           "score": float(score)})
        rows.append({"entities": entities})
      return rows
    if kind == "multiple_choice":
      rows = []
      for i, index in enumerate(outputs["answer_index"]):
        chosen = outputs.get("choice", outputs.get("option"))[i]
        row = {"choice": chosen.decode("utf-8"), "choice_index": int(index),
               "probabilities": [float(p) for p in
                                 outputs["probabilities"][i]]}
        if "answer" in outputs:  # RACE: the letter
          row["answer"] = outputs["answer"][i].decode("utf-8")
        rows.append(row)
      return rows
    if kind == "squad":
      rows = [{"answer": answer.decode("utf-8"), "start": int(start),
               "end": int(end), "score": float(score)}
              for answer, start, end, score in zip(
                  outputs["answer"], outputs["start"], outputs["end"],
                  outputs["score"])]
      for row, p in zip(rows, outputs.get("no_answer_probability", ())):
        row["no_answer_probability"] = float(p)
      return rows
    if self.embeddings == "mean":
      import numpy as np
      mask = outputs["input_mask"][..., None].astype(np.float32)
      vectors = ((outputs["sequence_output"] * mask).sum(1) /
                 np.maximum(mask.sum(1), 1.0))
    else:
      vectors = outputs["pooled_output"]
    return [{"embedding": [float(x) for x in v]} for v in vectors]


def load(path: str, embeddings: str = "pooled") -> Predictor:
  """The Predictor of the export at `path` (TensorFlow loads here)."""
  return Predictor(path, describe(path), embeddings)
