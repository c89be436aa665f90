"""Task heads in the two Keras layouts: keras-hub presets and Model Garden.

Added to head_tables' tables (same `Entry` form, canonical names there):

  keras_hub: `keras_hub.models.AlbertTextClassifier` (keras_hub/src/models/
    albert/albert_text_classifier.py): the backbone's pooled output ->
    Dropout "output_dropout" -> Dense "logits" [H, C] (+ bias), an optional
    activation on top. Our classifier is the same computation (pooled ->
    dropout -> dense), so the head maps one to one; a preset's activation
    other than none / softmax (whose input is our logits) is refused
    (`check_activation`). keras-hub has no other ALBERT task with a head
    of ours (AlbertMaskedLM is the pretraining head, name_tables).
  garden: Model Garden's `models.BertClassifier` (its `ClassificationHead`,
    head_name "sentence_prediction": Dense "logits" [H, C]) and
    `models.BertSpanLabeler` (`networks.SpanLabeling`: Dense
    "predictions/transform/logits" [H, 2] on the sequence output, column 0
    start, 1 end), under the variable names those classes give (the Model
    Garden reader builds them and reads their variables; the checkpoint's
    own keys are object paths). A BertClassifier built with
    `use_encoder_pooler=False` (the default of Model Garden's
    sentence_prediction task) pools in its head: "sentence_prediction/
    pooler_dense" (tanh dense on [CLS]) is our pooler, computed the same
    way, and the encoder's own pooler is unused (GARDEN_HEAD_POOLER).
"""

from typing import Dict, List

from albert_common.errors import UserInputError
from albert_tf.checkpoints.name_tables import Entry

# keras-hub task classes (task.json "class_name") -> our head kind (None:
# a pretraining task, read as an encoder with its masked-LM head).
KERAS_HUB_TASKS = {"AlbertTextClassifier": "classifier",
                   "AlbertMaskedLM": None}
KERAS_HUB_CLASSIFIER = "AlbertTextClassifier"
# The activations of an AlbertTextClassifier whose input is our logits.
_LOGIT_ACTIVATIONS = (None, "linear", "softmax")

GARDEN_CLASSIFIER_HEAD = "sentence_prediction"  # BertClassifier's head_name
# Model Garden's head pooler -> ours (use_encoder_pooler=False).
GARDEN_HEAD_POOLER = (
    Entry("pooler/kernel", f"{GARDEN_CLASSIFIER_HEAD}/pooler_dense/kernel"),
    Entry("pooler/bias", f"{GARDEN_CLASSIFIER_HEAD}/pooler_dense/bias"))
GARDEN_ENCODER_POOLER = ("pooler_transform/kernel", "pooler_transform/bias")


def _dense(ours: str, theirs: str) -> List[Entry]:
  """A Keras Dense (kernel [in, out], as ours) under `theirs`."""
  return [Entry(f"{ours}/dense/kernel", f"{theirs}/kernel"),
          Entry(f"{ours}/dense/bias", f"{theirs}/bias")]


TABLES: Dict[str, Dict[str, List[Entry]]] = {
    "keras_hub": {"classifier": _dense("classifier", "logits")},
    "garden": {
        "classifier": _dense("classifier",
                             f"{GARDEN_CLASSIFIER_HEAD}/logits"),
        "span": _dense("span", "predictions/transform/logits"),
    },
}


def check_activation(activation, where: str) -> None:
  """Requires an AlbertTextClassifier `activation` (its task.json value)
  whose input is the logits our classifier gives.

  Raises:
    UserInputError: any other activation (e.g. sigmoid, relu).
  """
  name = activation
  if isinstance(activation, dict):  # a serialized Keras object
    name = activation.get("config", {}).get("name",
                                            activation.get("class_name"))
  if name not in _LOGIT_ACTIVATIONS:
    raise UserInputError(
        f"{where}: an AlbertTextClassifier with activation={name!r} on its "
        "logits; ours gives logits (read as they are with activation none "
        "or softmax only)")
