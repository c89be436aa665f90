"""Our fine-tuned task models as a conversion source: a run dir or an export.

What each holds (albert_tf.training.finetuning.runner, export_once and the
serving exports, albert_tf.exports.serving):
  a fine-tuning run's --output_dir: ckpt-<step> (tf.train.Checkpoint(
    model=<task model>, optimizer=...)), best/ckpt-<step> (the best dev
    checkpoint, read first, as restore_best does), albert_config.json,
    labels.json (data_pipeline.tasks.label_list: own data, NER, GLUE) and,
    when the run exported, export.json naming its export;
  an export (run_* --export_dir): variables/ (the serving module's `model`,
    the same task model), assets/albert_config.json, the vocabulary
    (`*.model` or a WordPiece `*.txt`), labels.txt, labels.json.
A checkpoint prefix inside a run dir (run/ckpt-800, run/best/ckpt-600) is
read as that run's.

The head kind is told by the checkpoint's objects: `model/exit_heads`
(AlbertEarlyExitClassifier: written at full depth, see TaskSource.note),
`model/multiple_choice/`
(AlbertMultipleChoice), `model/squad_v2/` (AlbertSquadV2), else the
functional models' second layer with weights, `model/layer_with_weights-1/
dense/kernel` [H, C]: a token classifier when labels.json says
token_classification, a span head when it has no dropout layer
(AlbertSpanLabeler, C = 2; a classifier's is there even at rate 0), else a
sequence classifier. The model of that kind is built and
compared with the checkpoint (every key and shape) before it is restored.

The label names and problem type: labels.json (the run's, else the
export's), else the export's labels.txt ("<regression>": none), else those
of the export the run recorded in export.json. Without names a classifier of
one output is a regression head; of C outputs, unnamed labels.

Another layout's task model converted to ours (convert_checkpoint
--output_format=ours, task_writers.write_ours_task_model) has
`conversion.json` beside its checkpoint: its source, the source's layout
and the parts the source lacked and the conversion made new ("pooler": a
transformers class built without one). A new part is read as absent
(TaskSource.new_parts): a model started from the folder says it starts on
a fresh pooler, as from the source itself.
"""

import collections
import dataclasses
import json
from typing import Dict, Optional, Set, Tuple

import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import locate
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints.reading import object_readers
from albert_tf.checkpoints.task_models import source_paths
from albert_tf.checkpoints.task_models.source_paths import SourcePaths
from albert_tf.config import AlbertConfig
from data_pipeline.tasks import label_list as label_list_lib

# The export's asset written for regression instead of names.
_REGRESSION_MARK = "<regression>"
_KEY = "/.ATTRIBUTES/VARIABLE_VALUE"
_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
# A SavedModel's second names for a Keras model's weights and layers.
_ALIASES = ("variables", "trainable_variables", "non_trainable_variables",
            "keras_api")
_FUNCTIONAL_HEAD = "model/layer_with_weights-1/dense/kernel" + _KEY
# AlbertEarlyExitClassifier's L classifiers, [L, H, C] ("/" saved as ".S").
_EARLY_EXIT_KERNEL = "model/exit_heads.Skernel" + _KEY
# Beside a task model converted to ours from another layout (module doc).
CONVERSION_FILE = "conversion.json"
# labels.json task types -> Hugging Face problem_type.
PROBLEM_TYPES = {"classification": "single_label_classification",
                 "multi_label": "multi_label_classification",
                 "regression": "regression"}


@dataclasses.dataclass
class TaskSource:
  """A fine-tuned task model of ours, read.

  Attributes:
    arrays: canonical name -> float32 array, encoder, pooler and head
      (head_tables' names).
    head: the head kind (head_tables.HEAD_KINDS).
    num_labels: C of the head (span: 2, multiple choice and squad_v2: 1).
    labels: label names in the head's order, or None (regression, span,
      multiple choice, or a run that recorded none).
    problem_type: a classifier's, as Hugging Face names it (PROBLEM_TYPES);
      None for the other heads.
    paths: where it was read from.
    threshold: a multi-label classifier's decision threshold, as its
      labels.json recorded it, else None.
    new_parts: what a conversion to ours made new, the source having none
      (conversion.json: "pooler"), else ().
    note: what of the source the task model leaves out, in words ("" for
      nothing): an early-exit classifier (run_classifier --early_exit) is
      written at full depth, its last application's classifier (which
      gives its `logits`), without the exits.
  """
  arrays: Dict[str, np.ndarray]
  head: str
  num_labels: int
  labels: Optional[Tuple[str, ...]]
  problem_type: Optional[str]
  paths: SourcePaths
  threshold: Optional[float] = None
  new_parts: Tuple[str, ...] = ()
  note: str = ""


def find_source(path: str) -> Optional[SourcePaths]:
  """The parts of a run dir, an export or a checkpoint in a run dir at
  `path` (source_paths.find_paths; a run dir's checkpoint: best/ first, as
  restore_best reads it); None for anything else (any other checkpoint is
  read as before). Whether it holds a task head is told by
  `read_task_source`."""
  paths = source_paths.find_paths(path)
  if paths is None or paths.prefix:
    return paths
  prefix = (tf.train.latest_checkpoint(file_io.join(path, "best")) or
            tf.train.latest_checkpoint(path))
  return dataclasses.replace(paths, prefix=prefix) if prefix else None


def _variables_by_path(reader) -> Tuple[Dict[str, Tuple[str, list]],
                                          Set[str]]:
  """(object path key -> (stored key, shape) of every variable, the object
  paths of every object) of an object-based checkpoint (empty for a
  name-based one). The path runs through
  the layers, as a training checkpoint's keys do: a SavedModel stores a
  Keras model's weights as model/variables/<i>, and its object graph also
  holds their layer paths (the aliases "variables", "keras_api", ... are
  not followed)."""
  from tensorflow.core.protobuf import trackable_object_graph_pb2
  from tensorflow.python.trackable import trackable_utils
  if not reader.has_tensor(_OBJECT_GRAPH):
    return {}, set()
  shapes = reader.get_variable_to_shape_map()
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH))
  paths, queue = {0: ""}, collections.deque([0])
  while queue:  # breadth first: the shortest path, as the checkpoint's
    node = queue.popleft()
    for child in graph.nodes[node].children:
      if child.node_id in paths or child.local_name in _ALIASES:
        continue
      name = trackable_utils.escape_local_name(child.local_name)
      paths[child.node_id] = "/".join(filter(None, (paths[node], name)))
      queue.append(child.node_id)
  out = {}
  for node_id, node in enumerate(graph.nodes):
    for attribute in node.attributes:
      if attribute.name == "VARIABLE_VALUE" and node_id in paths:
        out[paths[node_id] + _KEY] = (attribute.checkpoint_key,
                                      shapes[attribute.checkpoint_key])
  return out, set(paths.values())


def _head_kind(keys: Dict[str, list], objects: Set[str],
               labels) -> Optional[str]:
  """The head kind a task model's checkpoint keys and objects show (module
  docstring); None when they show none of ours."""
  if _EARLY_EXIT_KERNEL in keys:
    return "early_exit"
  if any(k.startswith("model/multiple_choice/dense/") for k in keys):
    return "multiple_choice"
  if any(k.startswith("model/squad_v2/") for k in keys):
    return "squad_v2"
  if _FUNCTIONAL_HEAD not in keys:
    return None
  if labels is not None and labels.task_type == "token_classification":
    return "token_classifier"
  # A dropout layer is an object even at rate 0 (no RNG state then).
  has_dropout = "model/layer_with_weights-1/dropout" in objects
  if not has_dropout and keys[_FUNCTIONAL_HEAD][-1] == 2:
    return "span"
  return "classifier"


def build_task_model(kind: str, config: AlbertConfig, num_labels: int):
  """Our task model of `kind` (head_tables.HEAD_KINDS, or "early_exit") on
  a fresh encoder, as a fine-tuning run builds it."""
  # tf_keras models are imported on use (see model_variables).
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(config, name="encoder")
  if kind == "early_exit":
    from albert_tf.models.albert_early_exit_classifier import (
      AlbertEarlyExitClassifier,
    )
    return AlbertEarlyExitClassifier(encoder, num_classes=num_labels)
  if kind == "classifier":
    from albert_tf.models.albert_classifier import AlbertClassifier
    return AlbertClassifier(encoder, num_classes=num_labels)
  if kind == "token_classifier":
    from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
    return AlbertTokenClassifier(encoder, num_classes=num_labels)
  if kind == "span":
    from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
    return AlbertSpanLabeler(encoder)
  if kind == "multiple_choice":
    from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
    return AlbertMultipleChoice(encoder)
  from albert_tf.models.albert_squad_v2 import AlbertSquadV2
  return AlbertSquadV2(encoder)


def _label_list(paths: SourcePaths):
  """(labels.json's LabelList or None, labels.txt's names or None; a
  labels.txt is read when no labels.json names the labels: a conversion
  from a source without names writes one with none)."""
  saved = None
  for folder in paths.label_dirs:
    saved = label_list_lib.read(folder)
    if saved is not None:
      break
  if saved is not None and (saved.labels or saved.task_type == "regression"):
    return saved, None
  for folder in paths.label_dirs:
    text_file = file_io.join(folder, "labels.txt")
    if file_io.exists(text_file):
      names = file_io.read_text(text_file).splitlines()
      return saved, (None if names == [_REGRESSION_MARK] else tuple(names))
  return saved, None


def _labels_and_problem(kind: str, num_labels: int, saved, names,
                        paths: SourcePaths):
  """(label names or None, problem_type or None) of the head."""
  if saved is not None:
    names = saved.labels or names
  if kind not in ("classifier", "token_classifier"):
    return None, None
  if names is not None and len(names) != num_labels:
    raise UserInputError(
        f"{paths.prefix}: its head has {num_labels} outputs but the run's "
        f"labels ({', '.join(paths.label_dirs)}) name {len(names)}: "
        f"{list(names)}")
  if kind == "token_classifier":
    return names, None
  if saved is not None:
    return names, PROBLEM_TYPES.get(saved.task_type)
  return names, ("regression" if num_labels == 1 and names is None
                 else "single_label_classification")


def conversion_path(prefix: str) -> str:
  """conversion.json beside a checkpoint `prefix`."""
  return file_io.join(file_io.dirname(prefix) or ".", CONVERSION_FILE)


def _new_parts(prefix: str) -> Tuple[str, ...]:
  """The parts conversion.json beside `prefix` says are new, else ()."""
  path = conversion_path(prefix)
  if not file_io.exists(path):
    return ()
  try:
    return tuple(json.loads(file_io.read_text(path)).get("new", ()))
  except (ValueError, AttributeError):
    raise UserInputError(f"{path} is not a conversion record (a JSON "
                         "object with a 'new' list)") from None


def _check_config(paths: SourcePaths, config: AlbertConfig) -> None:
  """The model's config must compute what the run's albert_config.json
  does (a given --albert_config_file could differ in an activation)."""
  if not file_io.exists(paths.config_file):
    return
  differences = configs.architecture_differences(
      configs.load_albert_config(paths.config_file), config)
  if differences:
    raise UserInputError(
        f"{paths.config_file} (the {paths.kind}'s config) disagrees with the "
        "model's config: " + ", ".join(f"{k}: {paths.kind} {a!r}, model {b!r}"
                                       for k, a, b in differences))


def read_task_source(paths: SourcePaths,
                     config: AlbertConfig) -> Optional[TaskSource]:
  """Our task model at `paths`, head included; None when its checkpoint
  holds no task head of ours (a pretraining run: read as before).

  Raises:
    UserInputError: a config that disagrees with the run's, a head whose
      model does not fit the checkpoint (all misfits listed), or labels
      that disagree with the head.
  """
  reader = locate.checkpoint_reader(paths.prefix)
  stored, objects = _variables_by_path(reader)
  keys = {path: shape for path, (_, shape) in stored.items()}
  saved, names = _label_list(paths)
  kind = _head_kind(keys, objects, saved)
  if kind is None:
    return None
  _check_config(paths, config)
  head_key = next((k for k in (_FUNCTIONAL_HEAD, _EARLY_EXIT_KERNEL)
                   if k in keys), None)
  num_labels = int(keys[head_key][-1]) if head_key else 1
  model = build_task_model(kind, config, num_labels)
  root = tf.train.Checkpoint(model=model)
  problems = object_readers.object_mismatches(keys, "model", root)
  if any(problems):
    raise mapping.misfit_error(paths.prefix, f"ours ({paths.kind}, {kind} "
                               "head)", *problems)
  for key, variable in object_readers.checkpoint_keys(root).items():
    if key in stored:  # every weight (checked); dropout RNG states aside
      variable.assign(reader.get_tensor(stored[key][0]))
  arrays, note = model_variables.canonical_arrays(model), ""
  if kind == "early_exit":  # its full depth: the last application's head
    kind, note = "classifier", (
        f"full depth: the last of its {model.num_layers} exit classifiers; "
        "the early exits are not kept")
    arrays["classifier/dense/kernel"] = model.head_kernel.numpy()[-1]
    arrays["classifier/dense/bias"] = model.head_bias.numpy()[-1]
  labels, problem_type = _labels_and_problem(kind, num_labels, saved, names,
                                             paths)
  threshold = (saved.threshold if saved is not None and
               problem_type == PROBLEM_TYPES["multi_label"] else None)
  return TaskSource(arrays=arrays, head=kind, num_labels=num_labels,
                    labels=labels, problem_type=problem_type, paths=paths,
                    threshold=threshold, new_parts=_new_parts(paths.prefix),
                    note=note)
