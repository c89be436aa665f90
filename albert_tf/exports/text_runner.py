"""Reference runner: raw text -> labels or answers with a converted model.

What an app does around a `.tflite` or `.onnx` file, in plain Python for
tests, for the exports' dev-set checks (dev_evaluation) and for people
porting it: our tokenizer (data_pipeline.tokenization, the vocabulary
written beside the file), the packing of fine-tuning (glue / squad / race
featurisation), the model (any callable from a dict of int32 arrays to a
dict of numpy outputs: litert.LiteRTModel, onnx.runtime.OnnxModel), and
the post-processing (argmax and labels.txt; SQuAD's n-best spans mapped
back to the context). Imports no TensorFlow.

  runner = TextRunner(model, description, asset_dir)
  runner.classify(["a fine film"])             # -> ["1"]
  runner.answer(["who?"], ["... context ..."])  # SQuAD -> ["answer text"]
  runner.choose(articles, questions, options)   # RACE -> ["B", ...]
  runner.predict_labels(["my ticket"])         # own data -> ["billing"]
  runner.choose_index(contexts, questions, choices)  # own choices -> [2]

(`albert_tf.exports.litert.runner.TextRunner.from_file("sst2.tflite")`
opens a LiteRT file with its description.) An own-data model (labels.json
beside the file) predicts label names (classification), tuples of names
above the threshold (multi_label) or scores (regression).
"""

import dataclasses
import json
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from data_pipeline.tasks import choice_inputs
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tasks.race import features as race_features
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import features as squad_features
from data_pipeline.tasks.squad import postprocess as squad_postprocess
from data_pipeline.tokenization.factory import make_tokenizer

# The official run_squad defaults.
_SQUAD_DEFAULTS = dict(doc_stride=128, max_query_length=64, n_best_size=20,
                       max_answer_length=30, null_score_diff_threshold=None)
# Written beside a converted SQuAD model from the export's assets
# (albert_tf.exports.serving.squad_export).
SQUAD_SETTINGS_FILE = "squad_settings.json"


@dataclasses.dataclass(frozen=True)
class SquadSettings:
  """SQuAD featurisation and post-processing. A field left None takes the
  fine-tuning run's value recorded with the export (squad_settings.json
  beside the file), else the official default (`resolved`)."""
  doc_stride: Optional[int] = None
  max_query_length: Optional[int] = None
  n_best_size: Optional[int] = None
  max_answer_length: Optional[int] = None
  null_score_diff_threshold: Optional[float] = None

  def resolved(self, asset_dir: str) -> "SquadSettings":
    path = file_io.join(asset_dir, SQUAD_SETTINGS_FILE)
    saved = (json.loads(file_io.read_text(path)) if file_io.exists(path)
             else {})
    return SquadSettings(**{
        name: (value if value is not None
               else saved.get(name, _SQUAD_DEFAULTS[name]))
        for name, value in dataclasses.asdict(self).items()})


class TextRunner:
  """A converted model with its tokenizer and labels.

  Args:
    model: dict of int32 arrays [n, ..., seq] -> dict of numpy outputs
      (litert.LiteRTModel, onnx.runtime.OnnxModel).
    description: the JSON export_tflite / export_onnx wrote beside the
      file (kind, input_shape, vocab_file, labels); a dynamic sequence axis
      takes `seq_length`.
    asset_dir: the folder holding its vocabulary (and labels.txt).
    squad_settings: for SQuAD models.
  """

  def __init__(self, model: Callable[[Dict], Dict], description: Dict,
               asset_dir: str,
               squad_settings: SquadSettings = SquadSettings(),
               seq_length: Optional[int] = None):
    self.model = model
    self.kind = description["kind"]
    shape = list(description["input_shape"])
    if not isinstance(shape[-1], int):  # ONNX: a dynamic sequence axis
      shape[-1] = seq_length
    self.seq_length = shape[-1]
    self.input_shape = tuple(shape)
    vocab = description.get("vocab_file")
    if not vocab:
      raise UserInputError("the reference runner needs the vocabulary (a "
                           "SentencePiece model or a WordPiece vocab.txt) "
                           "beside the file, got none")
    self.tokenizer = make_tokenizer(
        *((file_io.join(asset_dir, vocab), None) if vocab.endswith(".model")
          else (None, file_io.join(asset_dir, vocab))),
        do_lower_case=description.get("do_lower_case", True))
    self.labels = None
    if description.get("labels_file"):
      self.labels = file_io.read_text(file_io.join(
          asset_dir, description["labels_file"])).splitlines()
    self.label_list = None
    if description.get("label_list_file"):
      self.label_list = label_list_lib.read(asset_dir)
      self.labels = list(self.label_list.labels)
    self.squad_settings = squad_settings.resolved(asset_dir)

  # --- GLUE ------------------------------------------------------------------

  def classify_inputs(self, text_a: Sequence[str],
                      text_b: Optional[Sequence[str]] = None
                     ) -> Dict[str, np.ndarray]:
    """`[CLS] a [SEP] (b [SEP])` as fine-tuning packs them, int32 [n, seq]."""
    pair = text_b is not None
    task = glue_examples.GlueTask("export", tuple(self.labels or ()), "a",
                         "b" if pair else None, "label", "accuracy")
    examples = [glue_examples.Example(guid=str(i), text_a=a,
                             text_b=text_b[i] if pair else None, label=None)
                for i, a in enumerate(text_a)]
    features = glue_features.featurize(task, examples, self.tokenizer,
                              self.seq_length)
    return features.padded(self.seq_length, self.tokenizer.pad_id)

  def classify(self, text_a: Sequence[str],
               text_b: Optional[Sequence[str]] = None) -> List[str]:
    """Label names (regression: the predicted values as strings;
    multi_label: the names above the threshold joined with "|")."""
    predicted = self.predict_labels(text_a, text_b)
    return [("|".join(p) if isinstance(p, tuple) else str(p))
            for p in predicted]

  def predict_labels(self, text_a: Sequence[str],
                     text_b: Optional[Sequence[str]] = None) -> List:
    """Per text: its label name, the tuple of names above the threshold
    (multi_label) or its score (float; regression)."""
    outputs = self.model(self.classify_inputs(text_a, text_b))
    if "predictions" in outputs:
      return [float(v) for v in outputs["predictions"]]
    if self.label_list is not None and \
        self.label_list.task_type == "multi_label":
      threshold = self.label_list.threshold
      threshold = 0.5 if threshold is None else threshold
      return [tuple(n for n, p in zip(self.labels, row) if p > threshold)
              for row in outputs["probabilities"]]
    return [self.labels[i] for i in np.argmax(outputs["logits"], -1)]

  # --- SQuAD -----------------------------------------------------------------

  def squad_features(self, examples: Sequence[squad_examples.SquadExample]):
    """(features, int32 inputs [windows, seq]) of SQuAD examples."""
    s = self.squad_settings
    features = squad_features.convert_examples_to_features(
        examples, self.tokenizer, self.seq_length, s.doc_stride,
        s.max_query_length)
    inputs = {name: np.array([getattr(f, attr) for f in features], np.int32)
              for name, attr in zip(ENCODER_INPUT_NAMES + ("p_mask",),
                                    ("input_ids", "input_mask",
                                     "segment_ids", "p_mask"))}
    if self.kind != "squad_beam":
      del inputs["p_mask"]
    return features, inputs

  def squad_predictions(self, examples: Sequence[squad_examples.SquadExample]
                       ) -> Dict[str, str]:
    """qas_id -> answer text (predictions.json's)."""
    features, inputs = self.squad_features(examples)
    outputs = self.model(inputs)
    results = {f.unique_id: {k: v[i] for k, v in outputs.items()}
               for i, f in enumerate(features)}
    s = self.squad_settings
    if self.kind == "squad_beam":
      out = squad_postprocess.postprocess_v2(
          examples, features, results, s.n_best_size, s.max_answer_length,
          null_score_diff_threshold=(0.0 if s.null_score_diff_threshold
                                     is None
                                     else s.null_score_diff_threshold))
    else:
      threshold = s.null_score_diff_threshold
      out = squad_postprocess.postprocess_v1(
          examples, features, results, s.n_best_size, s.max_answer_length,
          cls_null_score=threshold is not None,
          null_score_diff_threshold=threshold or 0.0)
    return out.predictions

  def answer(self, questions: Sequence[str],
             contexts: Sequence[str]) -> List[str]:
    """The answer text of each question in its context."""
    examples = [squad_examples.SquadExample(qas_id=str(i), question_text=q,
                                   paragraph_text=c)
                for i, (q, c) in enumerate(zip(questions, contexts))]
    predictions = self.squad_predictions(examples)
    return [predictions[str(i)] for i in range(len(examples))]

  # --- RACE ------------------------------------------------------------------

  def race_inputs(self, examples: Sequence[race_examples.RaceExample],
                  max_qa_length: int = 128) -> Dict[str, np.ndarray]:
    """int32 [n, 4, seq] inputs of RACE examples (fine-tuning's packing)."""
    arrays = race_features.convert_examples_to_arrays(
        examples, self.tokenizer, self.seq_length,
        min(max_qa_length, self.seq_length - 3))
    return {name: arrays[name] for name in ENCODER_INPUT_NAMES}

  def choice_inputs(self, contexts: Sequence[str], questions: Sequence[str],
                    choices: Sequence[Sequence[str]],
                    max_qa_length: int = 128) -> Dict[str, np.ndarray]:
    """int32 [n, choices, seq] inputs of one's own multiple-choice
    questions (fine-tuning's packing)."""
    return choice_inputs.pack_choices(
        self.tokenizer, contexts, questions, choices, self.seq_length,
        min(max_qa_length, self.seq_length - 3))

  def choose_index(self, contexts: Sequence[str], questions: Sequence[str],
                   choices: Sequence[Sequence[str]],
                   max_qa_length: int = 128) -> List[int]:
    """The index of the chosen choice of each question."""
    logits = self.model(self.choice_inputs(contexts, questions, choices,
                                           max_qa_length))["logits"]
    return [int(i) for i in np.argmax(logits, -1)]

  def choose(self, articles: Sequence[str], questions: Sequence[str],
             options: Sequence[Sequence[str]],
             max_qa_length: int = 128) -> List[str]:
    """The letter ("A".."D") of the chosen option of each question."""
    examples = [race_examples.RaceExample(str(i), "high", a, q, list(o), 0)
                for i, (a, q, o) in enumerate(zip(articles, questions,
                                                  options))]
    logits = self.model(self.race_inputs(examples, max_qa_length))["logits"]
    return [race_examples.LABELS[i] for i in np.argmax(logits, -1)]
