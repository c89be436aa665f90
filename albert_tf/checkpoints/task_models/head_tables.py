"""Name tables of the fine-tuning (task) heads: other layouts <-> ours.

The encoder's and the pretraining heads' tables are in name_tables; this
module adds one table per task head and layout, in the same `Entry` form.

Our task heads, by kind, with their canonical names (H = hidden_size,
C = the number of labels):
  classifier: AlbertClassifier (classification C >= 2, regression C = 1,
    multi-label) "classifier/dense/kernel" [H, C], "classifier/dense/bias"
    [C].
  token_classifier: AlbertTokenClassifier "token_classifier/dense/kernel"
    [H, C], ".../bias" [C].
  span: AlbertSpanLabeler (SQuAD v1.1, v2.0 with the null score)
    "span/dense/kernel" [H, 2] (column 0 start, 1 end), ".../bias" [2].
  multiple_choice: AlbertMultipleChoice "multiple_choice/dense/kernel"
    [H, 1], ".../bias" [1].
  squad_v2: AlbertSquadV2 (the official run_squad_v2 head)
    "squad_v2/start_logits/{kernel [H, 1], bias [1]}",
    "squad_v2/end_dense_0/{kernel [2H, H], bias [H]}",
    "squad_v2/end_layer_norm/{gamma, beta} [H]",
    "squad_v2/end_dense_1/{kernel [H, 1], bias [1]}",
    "squad_v2/answer_class_dense_0/{kernel [2H, H], bias [H]}",
    "squad_v2/answer_class_dense_1/kernel [H, 1]" (no bias).

Their layouts:
  huggingface: transformers' AlbertForSequenceClassification /
    AlbertForTokenClassification `classifier.weight` [C, H] and `.bias`;
    AlbertForQuestionAnswering `qa_outputs.weight` [2, H]; AlbertForMultiple
    Choice `classifier.weight` [1, H]. The official v2 head has no
    Hugging Face class.
  official: google-research/albert run_classifier.py `output_weights`
    [C, H] / `output_bias`; run_race.py the same names with C = 1;
    run_squad_v1.py `cls/squad/output_weights` [2, H] / `output_bias`;
    run_squad_v2.py (squad_utils.create_v2_model) `start_logits/dense`,
    `end_logits/dense_0`, `end_logits/LayerNorm`, `end_logits/dense_1`,
    `answer_class/dense_0`, `answer_class/dense_1`. The official scripts
    have no token classifier.
  ours: our own fine-tuning runs and exports (task_sources), read under
    the canonical names above (one table per kind, each name its own).

The same source names can be several of our heads (a Hugging Face
`classifier.weight` [1, H] is a regression head or a multiple-choice one);
which one a source holds is told by its config (`architectures`) or by the
tool that loads it (`fits`).
"""

from typing import Dict, Iterable, List, Optional, Set, Tuple

from albert_common.errors import UserInputError
from albert_tf.checkpoints.name_tables import Entry
from albert_tf.checkpoints.task_models import keras_tables

Shape = Tuple[int, ...]

HEAD_KINDS = ("classifier", "token_classifier", "span", "multiple_choice",
              "squad_v2")

# What a head kind is, in words (for messages).
DESCRIPTIONS = {
    "classifier": "a sequence classifier (run_classifier)",
    "token_classifier": "a token classifier (run_ner)",
    "span": "a start/end span head (run_squad: SQuAD v1.1, or v2.0 with "
            "--null_score=cls)",
    "multiple_choice": "a multiple-choice head (run_race, "
                       "run_multiple_choice)",
    "squad_v2": "the official SQuAD v2.0 head (run_squad "
                "--version_2_with_negative --null_score=answer_class)",
}

_SQUAD_V2_LAYERS = (  # our sublayer, official sublayer, has a bias
    ("start_logits", "start_logits/dense", True),
    ("end_dense_0", "end_logits/dense_0", True),
    ("end_dense_1", "end_logits/dense_1", True),
    ("answer_class_dense_0", "answer_class/dense_0", True),
    ("answer_class_dense_1", "answer_class/dense_1", False),
)


def head_shapes(kind: str, hidden_size: int,
                num_labels: int = 0) -> Dict[str, Shape]:
  """Canonical name -> shape of head `kind`'s variables.

  Args:
    kind: one of HEAD_KINDS.
    hidden_size: H of the encoder.
    num_labels: C, for "classifier" and "token_classifier" (span: 2,
      multiple_choice: 1, squad_v2: unused).
  """
  h = hidden_size
  if kind == "squad_v2":
    shapes = {}
    for ours, _, bias in _SQUAD_V2_LAYERS:
      wide = ours in ("end_dense_0", "answer_class_dense_0")
      units = h if wide else 1
      shapes[f"squad_v2/{ours}/kernel"] = (2 * h if wide else h, units)
      if bias:
        shapes[f"squad_v2/{ours}/bias"] = (units,)
    shapes["squad_v2/end_layer_norm/gamma"] = (h,)
    shapes["squad_v2/end_layer_norm/beta"] = (h,)
    return shapes
  units = {"span": 2, "multiple_choice": 1}.get(kind, num_labels)
  if kind not in HEAD_KINDS:
    raise ValueError(f"unknown head kind {kind!r}")
  return {f"{kind}/dense/kernel": (h, units), f"{kind}/dense/bias": (units,)}


def _dense(ours: str, weight: str, bias: str) -> List[Entry]:
  """A dense layer stored [out, in] (theirs) <-> our kernel [in, out]."""
  return [Entry(f"{ours}/dense/kernel", weight, "transpose"),
          Entry(f"{ours}/dense/bias", bias)]


def _official_squad_v2() -> List[Entry]:
  t = []
  for ours, theirs, bias in _SQUAD_V2_LAYERS:
    t.append(Entry(f"squad_v2/{ours}/kernel", f"{theirs}/kernel"))
    if bias:
      t.append(Entry(f"squad_v2/{ours}/bias", f"{theirs}/bias"))
  t += [Entry("squad_v2/end_layer_norm/gamma", "end_logits/LayerNorm/gamma"),
        Entry("squad_v2/end_layer_norm/beta", "end_logits/LayerNorm/beta")]
  return t


_TABLES = {
    "huggingface": {
        "classifier": _dense("classifier", "classifier.weight",
                             "classifier.bias"),
        "token_classifier": _dense("token_classifier", "classifier.weight",
                                   "classifier.bias"),
        "span": _dense("span", "qa_outputs.weight", "qa_outputs.bias"),
        "multiple_choice": _dense("multiple_choice", "classifier.weight",
                                  "classifier.bias"),
    },
    "official": {
        "classifier": _dense("classifier", "output_weights", "output_bias"),
        "span": _dense("span", "cls/squad/output_weights",
                       "cls/squad/output_bias"),
        "multiple_choice": _dense("multiple_choice", "output_weights",
                                  "output_bias"),
        "squad_v2": _official_squad_v2(),
    },
}

# Our own runs' and exports' heads, read by task_sources under the
# canonical names.
_TABLES["ours"] = {kind: [Entry(name, name) for name in head_shapes(kind, 1)]
                   for kind in HEAD_KINDS}
# The layouts a head is written to (layouts_of): ours is always one.
_OTHER_LAYOUTS = ("huggingface", "official", "keras_hub", "garden")

# Hugging Face `architectures` -> our head kind (None: no task head).
HUGGINGFACE_ARCHITECTURES = {
    "AlbertForSequenceClassification": "classifier",
    "AlbertForTokenClassification": "token_classifier",
    "AlbertForQuestionAnswering": "span",
    "AlbertForMultipleChoice": "multiple_choice",
    "AlbertForMaskedLM": None,
    "AlbertForPreTraining": None,
    "AlbertModel": None,
}
# The task classes transformers builds without a pooler
# (AlbertModel(add_pooling_layer=False)).
HUGGINGFACE_WITHOUT_POOLER = ("token_classifier", "span")


def layouts_of(kind: str) -> List[str]:
  """The layouts that can express head `kind`."""
  return [layout for layout, heads in _TABLES.items()
          if kind in heads and layout in _OTHER_LAYOUTS]


def head_table(layout: str, kind: str) -> List[Entry]:
  """The table of head `kind` in `layout`.

  Raises:
    UserInputError: the layout has no such head.
  """
  heads = _TABLES.get(layout, {})
  if kind not in heads:
    where = ", ".join(layouts_of(kind)) or "no other layout"
    raise UserInputError(
        f"the {layout} layout cannot hold {DESCRIPTIONS[kind]}; layouts "
        f"that can: {where} (or our checkpoint format)")
  return list(heads[kind])


def source_names(layout: str) -> Set[str]:
  """Every name a task head has in `layout` (empty for other layouts)."""
  return {e.theirs for table in _TABLES.get(layout, {}).values()
          for e in table}


def kinds_matching(layout: str, names: Iterable[str]) -> List[str]:
  """Our head kinds whose `layout` names all of `names` are, in HEAD_KINDS
  order (several when the names are ambiguous); [] if none."""
  names = set(names)
  return [kind for kind, table in _TABLES.get(layout, {}).items()
          if names and names <= {e.theirs for e in table}]


def kind_of(name: str) -> Optional[str]:
  """Our head kind of a canonical name, else None."""
  head = name.split("/", 1)[0]
  return head if head in HEAD_KINDS and "/" in name else None


def is_task_head(name: str) -> bool:
  return kind_of(name) is not None


def num_labels_of(kind: str, arrays: Dict[str, object]) -> int:
  """C of head `kind` from its canonical arrays (the kernel's last axis)."""
  if kind == "squad_v2":
    return 1
  return int(arrays[f"{kind}/dense/kernel"].shape[-1])


# The keras-hub and Model Garden layouts' heads (task_models.keras_tables).
_TABLES.update(keras_tables.TABLES)
