"""Checkpoint interchange: read any supported layout, load it, write any layout.

Supported inputs (`input_format`, detected from the contents with "auto"):
  ours: a `tf.train.Checkpoint(model=AlbertPretrainer)` (optionally with an
    optimizer, step, ... under other names, which are ignored) or
    `tf.train.Checkpoint(encoder=AlbertEncoder)`; a prefix or a directory
    (its latest checkpoint).
  official: a google-research/albert TF1 checkpoint (`model.ckpt-NNN`, also
    the TF-Hub `module/` prefix); optimizer slots (adam_m, adam_v, lamb_m,
    lamb_v, Adam, ...) and global_step are skipped.
  huggingface: a `model.safetensors` file, a sharded
    `model.safetensors.index.json`, or a folder holding either (+ config.json),
    keys with or without the `albert.` prefix; read with `safetensors.numpy`,
    no torch.
  garden: `tf.train.Checkpoint(encoder=official.nlp.modeling.networks.
    AlbertEncoder)`, as written by Model Garden's
    tf2_albert_encoder_checkpoint_converter (encoder only).
  keras_hub: a keras-hub ALBERT preset directory (keras_hub_preset).

Outputs (`convert_checkpoint`): ours, official (TF1 names, written with
tf.compat.v1 Variables and a Saver), huggingface (safetensors + config.json)
and keras_hub (a preset directory with the tokenizer, keras_hub_preset).

Every read is strict: after skipping optimizer state, every source variable
must map to a model variable, every encoder variable must be present and
every shape must agree; all violations are reported together in one
`UserInputError`. Inputs and outputs may be on any TensorFlow filesystem
(`gs://`); every output is written under a temporary name and renamed. A pretraining head (masked_lm, sentence_order) is either
complete in the source or absent; an absent head is reported, never filled
in silently.
"""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from data_pipeline import file_io
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import keras_hub_preset
from albert_tf.checkpoints import name_tables
from albert_tf.config import AlbertConfig
from data_pipeline.shared import UserInputError

INPUT_FORMATS = ("auto", "ours", "official", "huggingface", "garden",
                 "keras_hub")
OUTPUT_FORMATS = ("ours", "official", "huggingface", "keras_hub")

# TF1 optimizer state in released / official-trainer checkpoints.
_TF1_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/lamb_m", "/lamb_v", "/Adam",
                      "/Adam_1", "/Momentum", "/Adagrad", "/RMSProp",
                      "/RMSProp_1", "/AdamWeightDecayOptimizer",
                      "/AdamWeightDecayOptimizer_1")
_TF1_NON_WEIGHTS = ("global_step", "beta1_power", "beta2_power")


@dataclasses.dataclass
class Weights:
  """Weights in our canonical names (see name_tables), as float32 arrays.

  Attributes:
    arrays: canonical name -> np.ndarray in our layout.
    format: the layout they were read from.
    path: the resolved file or prefix they were read from.
    config: the config stored with them (Hugging Face folders), else None.
  """
  arrays: Dict[str, np.ndarray]
  format: str
  path: str
  config: Optional[AlbertConfig] = None
  preset: Optional["keras_hub_preset.PresetContents"] = None

  def has_heads(self) -> bool:
    return any(name_tables.is_head(n) for n in self.arrays)


@dataclasses.dataclass
class LoadReport:
  """What `load_weights_into` did.

  Attributes:
    format, path: the source.
    loaded: canonical names assigned.
    not_in_checkpoint: canonical names of the model's head variables the
      checkpoint lacks (left as initialised).
    unused: canonical names in the checkpoint the model has no place for
      (pretraining heads when loading into a bare encoder).
    other_variables: names of model variables outside the encoder and the
      pretraining heads (e.g. a task head), left as initialised.
  """
  format: str
  path: str
  loaded: List[str]
  not_in_checkpoint: List[str]
  unused: List[str]
  other_variables: List[str]

  def summary(self) -> str:
    parts = [f"loaded {len(self.loaded)} variables from {self.path} "
             f"({self.format} layout)"]
    if self.not_in_checkpoint:
      parts.append(f"not in the checkpoint, left as initialised: "
                   f"{', '.join(self.not_in_checkpoint)}")
    if self.unused:
      parts.append(f"in the checkpoint but not in the model: "
                   f"{', '.join(self.unused)}")
    if self.other_variables:
      parts.append(f"newly initialised (not part of ALBERT): "
                   f"{', '.join(self.other_variables)}")
    return "; ".join(parts)


# --- Locating and detecting -------------------------------------------------


def resolve_path(path: str) -> Tuple[str, str]:
  """("tf", checkpoint prefix) or ("safetensors", file) for a user path.

  Raises:
    UserInputError: nothing usable at `path`.
  """
  if file_io.isdir(path):
    for name in ("model.safetensors", "model.safetensors.index.json"):
      if file_io.exists(file_io.join(path, name)):
        return "safetensors", file_io.join(path, name)
    latest = tf.train.latest_checkpoint(path)
    if latest:
      return "tf", latest
    if file_io.exists(file_io.join(path, "pytorch_model.bin")):
      raise UserInputError(
          f"{path} holds pytorch_model.bin only; save it as safetensors "
          "(model.save_pretrained(dir, safe_serialization=True)), torch "
          "pickles are not read here")
    raise UserInputError(
        f"no checkpoint in directory {path}: expected model.safetensors, "
        "or a TensorFlow checkpoint with a 'checkpoint' state file")
  if path.endswith(".safetensors") or path.endswith(".safetensors.index.json"):
    if not file_io.exists(path):
      raise UserInputError(f"checkpoint file {path} not found")
    return "safetensors", path
  if path.endswith(".index") and file_io.exists(path):
    return "tf", path[:-len(".index")]
  if file_io.exists(path + ".index"):
    return "tf", path
  raise UserInputError(
      f"checkpoint {path} not found (neither {path}.index, a .safetensors "
      "file nor a directory holding a checkpoint)")


def _checkpoint_reader(prefix: str):
  """A CheckpointReader of `prefix`. (tf.train.load_checkpoint first asks
  whether the prefix is a folder, which ram:// answers yes: "ckpt-4" is a
  string prefix of "ckpt-4.index".)"""
  try:
    return tf.compat.v1.train.NewCheckpointReader(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise UserInputError(f"cannot read checkpoint {prefix}: {e}") from e


def _list_tf_checkpoint(prefix: str) -> Dict[str, List[int]]:
  return _checkpoint_reader(prefix).get_variable_to_shape_map()


def detect_format(path: str) -> str:
  """"ours", "official", "huggingface" or "garden", from the contents."""
  kind, resolved = resolve_path(path)
  if kind == "safetensors":
    return "huggingface"
  keys = _list_tf_checkpoint(resolved)
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in keys:
    roots = {k.split("/", 1)[0] for k in keys if ".ATTRIBUTES" in k}
    if "model" in roots:
      return "ours"
    if "encoder" in roots:
      # Model Garden's TransformerEncoderBlock attributes vs our sublayers.
      garden = any("/_attention_layer/" in k for k in keys
                   if k.startswith("encoder/"))
      return "garden" if garden else "ours"
  names = [k for k in keys if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
  if any(_strip_module(k).startswith(("bert/", "cls/")) for k in names):
    return "official"
  raise UserInputError(
      f"cannot tell the layout of checkpoint {resolved}: no bert/... names "
      f"(official), model/ or encoder/ objects (ours, Model Garden); first "
      f"names: {sorted(names)[:5]}")


def _strip_module(name: str) -> str:
  return name[len("module/"):] if name.startswith("module/") else name


# --- Mapping with strict checks ---------------------------------------------


def _fail(source: str, layout: str, unmatched=(), missing=(),
          mismatched=(), extra: Sequence[str] = ()) -> None:
  # One line for the error, then one line per item (tools print it after
  # "error: ").
  lines = [f"checkpoint {source} ({layout} layout) does not fit the model:"]
  for items, what in ((unmatched, "checkpoint variable(s) match no model "
                                  "variable"),
                      (missing, "model variable(s) missing from the "
                                "checkpoint"),
                      (mismatched, "shape mismatch(es)")):
    if items:
      lines.append(f"  {len(items)} {what}:")
      lines.extend(f"    {item}" for item in items)
  lines.extend("  " + line for line in extra)
  lines.append("  (check --albert_config_file: vocab_size, hidden_size, "
               "num_hidden_groups, inner_group_num, ...)")
  raise UserInputError("\n".join(lines))


def map_to_ours(source: Dict[str, np.ndarray], table, shapes, *,
                source_name: str, layout: str) -> Dict[str, np.ndarray]:
  """Source arrays (their names) -> canonical arrays, or one error for all.

  Args:
    source: their name -> array, optimizer state already removed.
    table: list of name_tables.Entry.
    shapes: canonical name -> our shape (name_tables.our_shapes).
    source_name, layout: for the error message.
  """
  by_theirs = {e.theirs: e for e in table}
  unmatched = sorted(n for n in source if n not in by_theirs)
  mismatched, out = [], {}
  for name in sorted(source):
    entry = by_theirs.get(name)
    if entry is None:
      continue
    ours_shape = tuple(shapes[entry.ours])
    want = tuple(entry.transform.source_shape(ours_shape))
    got = tuple(source[name].shape)
    if got != want:
      mismatched.append(f"{name} is {list(got)}, the model needs {list(want)}")
      continue
    out[entry.ours] = np.asarray(
        entry.transform.to_ours(np.asarray(source[name]), ours_shape),
        dtype=np.float32)
  present = {e.ours for e in table if e.theirs in source}
  missing = []
  for entry in table:
    if entry.ours in present:
      continue
    head = _head_of(entry.ours)
    # A head absent as a whole is allowed; a partial head is not.
    if head and not any(_head_of(n) == head for n in present):
      continue
    missing.append(entry.theirs)
  if unmatched or missing or mismatched:
    _fail(source_name, layout, unmatched, missing, mismatched)
  return out


def map_from_ours(arrays: Dict[str, np.ndarray], table) -> Dict[str, np.ndarray]:
  """Canonical arrays -> their names, for every entry present in `arrays`."""
  by_ours = {e.ours: e for e in table}
  unknown = sorted(n for n in arrays if n not in by_ours)
  if unknown:
    raise UserInputError(f"no place in the target layout for: {unknown}")
  return {by_ours[n].theirs: np.ascontiguousarray(
      by_ours[n].transform.from_ours(np.asarray(a)), dtype=np.float32)
          for n, a in arrays.items()}


def _head_of(name: str) -> Optional[str]:
  for prefix in name_tables.HEAD_PREFIXES:
    if name.startswith(prefix):
      return prefix[:-1]
  return None


# --- Readers ---------------------------------------------------------------


def _read_official(prefix: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  reader = _checkpoint_reader(prefix)
  source, skipped = {}, []
  for name in reader.get_variable_to_shape_map():
    if (name.endswith(_TF1_SLOT_SUFFIXES) or
        name.split("/")[-1] in _TF1_NON_WEIGHTS):
      skipped.append(name)
      continue
    source[_strip_module(name)] = reader.get_tensor(name)
  if skipped:
    logging.info("skipped %d optimizer variables of %s", len(skipped), prefix)
  return map_to_ours(source, name_tables.official_table(config),
                     name_tables.our_shapes(config), source_name=prefix,
                     layout="official")


def _load_safetensors(path: str) -> Dict[str, np.ndarray]:
  from safetensors import SafetensorError  # pylint: disable=g-import-not-at-top
  from safetensors.numpy import load  # pylint: disable=g-import-not-at-top
  files = [path]
  if path.endswith(".index.json"):
    try:
      weight_map = json.loads(file_io.read_text(path))["weight_map"]
    except (OSError, ValueError, KeyError) as e:
      raise UserInputError(f"bad safetensors index {path}: {e}") from e
    folder = file_io.dirname(path)
    files = [file_io.join(folder, f) for f in sorted(set(weight_map.values()))]
  tensors = {}
  for file in files:
    try:
      # From bytes: safetensors' own file reader knows local paths only.
      tensors.update(load(file_io.read_bytes(file)))
    except (OSError, SafetensorError, ValueError) as e:
      raise UserInputError(f"cannot read safetensors file {file}: {e}") from e
  return tensors


def _read_huggingface(path: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  tensors = _load_safetensors(path)
  heads = ("predictions.", "sop_classifier.")
  source = {}
  for name, array in tensors.items():
    if not name.startswith(("albert.",) + heads):
      name = "albert." + name
    source[name] = array
  for name in name_tables.HUGGINGFACE_BUFFERS:
    source.pop(name, None)
  problems = []
  for tied, target in name_tables.HUGGINGFACE_TIED.items():
    if tied in source:
      array = source.pop(tied)
      if target in source and (array.shape != source[target].shape or
                               not np.array_equal(array, source[target])):
        problems.append(f"{tied} differs from {target}, to which this model "
                        "ties it")
  if problems:
    _fail(path, "huggingface", extra=problems)
  return map_to_ours(source, name_tables.huggingface_table(config),
                     name_tables.our_shapes(config), source_name=path,
                     layout="huggingface")


def _checkpoint_keys(root: tf.train.Checkpoint) -> Dict[str, tf.Variable]:
  """The checkpoint key each variable under `root` is saved as."""
  # pylint: disable=g-import-not-at-top
  from tensorflow.python.checkpoint import graph_view
  from tensorflow.python.trackable import trackable_utils
  objects, paths = graph_view.ObjectGraphView(root).breadth_first_traversal()
  return {trackable_utils.object_path_to_string(paths[o]) +
          "/.ATTRIBUTES/VARIABLE_VALUE": o
          for o in objects if isinstance(o, tf.Variable)}


def _is_object_weight(key: str, root_name: str) -> bool:
  return (key.startswith(root_name + "/") and ".OPTIMIZER_SLOT" not in key
          and key.endswith("/.ATTRIBUTES/VARIABLE_VALUE"))


def _object_mismatches(keys: Dict[str, List[int]], root_name: str,
                       root: tf.train.Checkpoint):
  """(unmatched, missing, mismatched) between a checkpoint and `root`."""
  expected = _checkpoint_keys(root)
  present = {k: s for k, s in keys.items() if _is_object_weight(k, root_name)}
  unmatched = sorted(set(present) - set(expected))
  missing = sorted(f"{v.name[:-2]} ({k})" for k, v in expected.items()
                   if k not in present)
  mismatched = [f"{expected[k].name[:-2]} ({k}) is {list(present[k])}, the "
                f"model needs {expected[k].shape.as_list()}"
                for k in sorted(set(present) & set(expected))
                if list(present[k]) != expected[k].shape.as_list()]
  return unmatched, missing, mismatched


def _restore_object_checkpoint(prefix: str, root_name: str, model) -> None:
  status = tf.train.Checkpoint(**{root_name: model}).read(prefix)
  status.expect_partial()
  status.assert_existing_objects_matched()


def _read_ours(prefix: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  # pylint: disable=g-import-not-at-top
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  keys = _list_tf_checkpoint(prefix)
  roots = {k.split("/", 1)[0] for k in keys if ".ATTRIBUTES" in k}
  root_name = "model" if "model" in roots else "encoder"
  encoder = AlbertEncoder(config)
  model = AlbertPretrainer(encoder) if root_name == "model" else encoder
  problems = _object_mismatches(keys, root_name,
                                tf.train.Checkpoint(**{root_name: model}))
  if not any(problems):
    _restore_object_checkpoint(prefix, root_name, model)
    return _canonical_arrays(model)
  if root_name == "model" and not problems[2]:
    # Another model holding our encoder as `.encoder` (e.g. a fine-tuning
    # model): its encoder must be complete; its own heads are not ours.
    try:
      _restore_object_checkpoint(
          prefix, "model", tf.train.Checkpoint(encoder=encoder))
      logging.warning("%s is not an AlbertPretrainer checkpoint; read its "
                      "encoder only", prefix)
      return _canonical_arrays(encoder)
    except (AssertionError, ValueError, tf.errors.OpError):
      pass
  _fail(prefix, f"ours ({root_name}/)", *problems)


def build_garden_encoder(config: AlbertConfig, **kwargs):
  """Model Garden's `networks.AlbertEncoder` with `config`'s architecture.

  kwargs go to its constructor (e.g. initializer, dropout_rate).
  """
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top
  kwargs.setdefault("dict_outputs", True)
  return networks.AlbertEncoder(
      vocab_size=config.vocab_size, embedding_width=config.embedding_size,
      hidden_size=config.hidden_size, num_layers=config.num_hidden_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      max_sequence_length=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, **kwargs)


def _read_garden(prefix: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  table = name_tables.garden_table(config)
  garden = build_garden_encoder(config)
  keys = _list_tf_checkpoint(prefix)
  problems = _object_mismatches(keys, "encoder",
                                tf.train.Checkpoint(encoder=garden))
  if any(problems):
    _fail(prefix, "Model Garden (encoder/)", *problems)
  _restore_object_checkpoint(prefix, "encoder", garden)
  source = {v.name[:-2]: v.numpy() for v in garden.weights}
  return map_to_ours(source, table, name_tables.our_shapes(config),
                     source_name=prefix, layout="garden")


def read_weights(path: str, config: AlbertConfig,
                 input_format: str = "auto") -> Weights:
  """Reads a checkpoint of any supported layout into canonical arrays.

  Args:
    path: checkpoint prefix, .safetensors file, or a directory.
    config: the model's AlbertConfig (shapes and the name table follow it).
    input_format: one of INPUT_FORMATS.

  Raises:
    UserInputError: missing or unreadable input, unknown layout, or any
      unmatched name / missing variable / shape mismatch (all listed).
  """
  if input_format not in INPUT_FORMATS:
    raise UserInputError(f"input format must be one of {INPUT_FORMATS}, got "
                         f"{input_format!r}")
  if input_format == "keras_hub" or (input_format == "auto" and
                                     keras_hub_preset.is_preset(path)):
    contents = keras_hub_preset.read_preset(path, config)
    return Weights(arrays=contents.arrays, format="keras_hub", path=path,
                   config=contents.config, preset=contents)
  kind, resolved = resolve_path(path)
  layout = detect_format(path) if input_format == "auto" else input_format
  if (layout == "huggingface") != (kind == "safetensors"):
    raise UserInputError(f"{path} is not a {layout} checkpoint")
  readers = {"official": _read_official, "huggingface": _read_huggingface,
             "ours": _read_ours, "garden": _read_garden}
  stored_config = None
  if layout == "huggingface":
    config_file = file_io.join(file_io.dirname(resolved), "config.json")
    if file_io.exists(config_file):
      stored_config = configs.load_albert_config(config_file)
  arrays = readers[layout](resolved, config)
  # What was loaded or converted is reported once, by the caller.
  logging.debug("read %d variables from %s (%s layout)", len(arrays),
                resolved, layout)
  return Weights(arrays=arrays, format=layout, path=resolved,
                 config=stored_config)


# --- Our models' variables in canonical names --------------------------------


def _find(model, cls):
  if isinstance(model, cls):
    return model
  for module in model.submodules:
    if isinstance(module, cls):
      return module
  return None


def canonical_variables(model) -> Dict[str, tf.Variable]:
  """Canonical name -> variable, for an AlbertEncoder, AlbertPretrainer or a
  model holding an AlbertEncoder (and optionally our pretraining heads)."""
  # pylint: disable=g-import-not-at-top
  from albert_tf.layers.masked_lm_head import MaskedLMHead
  from albert_tf.layers.sentence_order_head import SentenceOrderHead
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = _find(model, AlbertEncoder)
  if encoder is None:
    raise UserInputError(f"model {model.name!r} holds no AlbertEncoder")
  table_name = encoder.get_embedding_table().name
  prefix = table_name[:-len("embeddings/word_embeddings/embeddings:0")]
  out = {}
  for v in encoder.weights:
    if not v.name.startswith(prefix):
      raise ValueError(f"unexpected encoder variable name {v.name}")
    out[v.name[len(prefix):-2]] = v
  mlm = _find(model, MaskedLMHead)
  if mlm is not None and model is not encoder:
    out.update({"masked_lm/transform/kernel": mlm.transform.kernel,
                "masked_lm/transform/bias": mlm.transform.bias,
                "masked_lm/layer_norm/gamma": mlm.layer_norm.gamma,
                "masked_lm/layer_norm/beta": mlm.layer_norm.beta,
                "masked_lm/output_bias": mlm.output_bias})
  sop = _find(model, SentenceOrderHead)
  if sop is not None and model is not encoder:
    out.update({"sentence_order/dense/kernel": sop.dense.kernel,
                "sentence_order/dense/bias": sop.dense.bias})
  return out


def _canonical_arrays(model) -> Dict[str, np.ndarray]:
  return {n: v.numpy() for n, v in canonical_variables(model).items()}


def _encoder_config(model) -> AlbertConfig:
  from albert_tf.networks.albert_encoder import AlbertEncoder  # pylint: disable=g-import-not-at-top
  encoder = _find(model, AlbertEncoder)
  if encoder is None:
    raise UserInputError(f"model {model.name!r} holds no AlbertEncoder")
  return encoder.config


def load_weights_into(model, path: str, input_format: str = "auto",
                      check_config: bool = True) -> LoadReport:
  """Loads a checkpoint of any supported layout into `model`.

  Args:
    model: an AlbertEncoder, an AlbertPretrainer, or a tf_keras model holding
      an AlbertEncoder (e.g. a fine-tuning model). Every encoder variable is
      loaded; pretraining heads are loaded when both model and checkpoint have
      them; anything else (task heads) is left as initialised and reported.
    path: checkpoint prefix, .safetensors file or directory (see module doc).
    input_format: one of INPUT_FORMATS; "auto" detects it from the contents.
    check_config: for Hugging Face folders with a config.json, require that
      its architecture equals the model's config.

  Returns:
    A LoadReport (also logged).

  Raises:
    UserInputError: see `read_weights`; also a config.json that disagrees
      with the model's config.
  """
  config = _encoder_config(model)
  weights = read_weights(path, config, input_format)
  if check_config and weights.config is not None:
    differences = configs.architecture_differences(weights.config, config)
    if differences:
      raise UserInputError(
          f"config.json next to {weights.path} disagrees with the model's "
          "config: " + ", ".join(f"{k}: checkpoint {a!r}, model {b!r}"
                                 for k, a, b in differences))
  targets = canonical_variables(model)
  loaded, not_in_checkpoint = [], []
  for name, variable in targets.items():
    if name in weights.arrays:
      variable.assign(weights.arrays[name])
      loaded.append(name)
    elif name_tables.is_head(name):
      not_in_checkpoint.append(name)
    else:  # read_weights guarantees a complete encoder
      raise AssertionError(f"encoder variable {name} not read")
  target_ids = {id(v) for v in targets.values()}
  others = [v.name for v in model.weights if id(v) not in target_ids]
  report = LoadReport(format=weights.format, path=weights.path, loaded=loaded,
                      not_in_checkpoint=not_in_checkpoint,
                      unused=sorted(set(weights.arrays) - set(targets)),
                      other_variables=others)
  if report.not_in_checkpoint:
    logging.warning("%s", report.summary())
  else:
    logging.info("%s", report.summary())
  return report


# --- Writers ---------------------------------------------------------------


def _move_into_place(tmp_dir: str, output_dir: str, names: Sequence[str],
                     last: Sequence[str] = ()) -> None:
  """Renames files from tmp_dir into output_dir (`last` ones at the end)."""
  for name in [n for n in names if n not in last] + list(last):
    file_io.rename(file_io.join(tmp_dir, name), file_io.join(output_dir, name))


def _write_checkpoint_files(output_prefix: str, write) -> List[str]:
  """Calls write(tmp_prefix), then moves the files to output_prefix.

  The files are written in a hidden folder `.<name>.tmp-<pid>` next to
  them. The `.index` file (which makes a checkpoint visible) moves last, and
  the `checkpoint` state file after it, so no half-written checkpoint
  appears under the final name.
  """
  output_dir = file_io.dirname(output_prefix) or "."
  base = file_io.basename(output_prefix)
  tmp_dir = file_io.temp_name(output_prefix)
  try:
    file_io.makedirs(tmp_dir)
  except OSError as e:
    raise UserInputError(f"--output_checkpoint={output_prefix}: cannot "
                         f"create its directory: {e}") from None
  try:
    write(file_io.join(tmp_dir, base))
    files = [f for f in file_io.listdir(tmp_dir) if f.startswith(base + ".")]
    _move_into_place(tmp_dir, output_dir, files, last=[base + ".index"])
    file_io.write_atomic(file_io.join(output_dir, "checkpoint"),
                         f'model_checkpoint_path: "{base}"\n'
                         f'all_model_checkpoint_paths: "{base}"\n')
  finally:
    file_io.rmtree(tmp_dir)
  return files


def write_official(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                   output_prefix: str) -> None:
  """A TF1 checkpoint with google-research/albert names: the files a
  tf.compat.v1 Saver writes (SaveV2: .index + .data-00000-of-00001),
  written eagerly (a Session would only add TensorFlow's MLIR log line)."""
  tensors = map_from_ours(arrays, name_tables.official_table(config))

  def write(prefix):
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])

  _write_checkpoint_files(output_prefix, write)


def write_huggingface(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                      output: str) -> str:
  """model.safetensors (+ config.json when `output` is a directory).

  Returns:
    The path of the .safetensors file written.
  """
  from safetensors.numpy import save  # pylint: disable=g-import-not-at-top
  tensors = map_from_ours(arrays, name_tables.huggingface_table(config))
  heads = {_head_of(n) for n in arrays} - {None}
  architectures = (["AlbertForPreTraining"] if heads == {"masked_lm",
                                                        "sentence_order"}
                   else ["AlbertForMaskedLM"] if heads == {"masked_lm"}
                   else ["AlbertModel"])
  if output.endswith(".safetensors"):
    file = output
  else:
    file = file_io.join(output, "model.safetensors")
  try:
    file_io.makedirs(file_io.dirname(file))
  except OSError as e:
    raise UserInputError(f"--output_checkpoint={output}: cannot create its "
                         f"directory: {e}") from None
  file_io.write_atomic(file, save(tensors, metadata={"format": "pt"}))
  if not output.endswith(".safetensors"):
    values = configs.config_to_huggingface(config, architectures)
    file_io.write_atomic(file_io.join(output, "config.json"),
                         json.dumps(values, indent=2, sort_keys=True) + "\n")
  return file


def write_ours(arrays: Dict[str, np.ndarray], config: AlbertConfig,
               output_prefix: str) -> str:
  """tf.train.Checkpoint(model=AlbertPretrainer) when both heads are there,
  else tf.train.Checkpoint(encoder=AlbertEncoder). Returns the root name."""
  # pylint: disable=g-import-not-at-top
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(config)
  heads = {_head_of(n) for n in arrays} - {None}
  if heads == {"masked_lm", "sentence_order"}:
    model, root = AlbertPretrainer(encoder), "model"
  else:
    if heads:
      logging.warning("only the %s head is present; writing the encoder "
                      "alone (our pretrainer has both heads)", heads)
    model, root = encoder, "encoder"
  variables = canonical_variables(model)
  missing = sorted(set(variables) - set(arrays))
  if missing:
    raise UserInputError(f"cannot write our checkpoint, missing: {missing}")
  for name, variable in variables.items():
    variable.assign(arrays[name])
  checkpoint = tf.train.Checkpoint(**{root: model})
  _write_checkpoint_files(output_prefix, checkpoint.write)
  return root


def convert_checkpoint(config: AlbertConfig, input_checkpoint: str,
                       output_checkpoint: str, output_format: str,
                       input_format: str = "auto",
                       spm_model_file: Optional[str] = None,
                       do_lower_case: bool = True) -> str:
  """Converts between layouts; returns a one-line description.

  Args:
    config: the model's AlbertConfig.
    input_checkpoint: see `read_weights`.
    output_checkpoint: a checkpoint prefix (ours, official; the directory is
      created) or, for huggingface, a directory (model.safetensors +
      config.json) or a .safetensors file name.
    output_format: one of OUTPUT_FORMATS.
    input_format: one of INPUT_FORMATS.
    spm_model_file, do_lower_case: the tokenizer, for keras_hub output
      (keras_hub_preset.write_preset).
  """
  if output_format not in OUTPUT_FORMATS:
    raise UserInputError(f"--output_format must be one of {OUTPUT_FORMATS}, "
                         f"got {output_format!r}")
  if output_format in ("official", "huggingface"):
    # Fail on an inexpressible config before reading anything.
    name_tables.table_for(output_format, config)
  if output_format == "keras_hub":
    keras_hub_preset.check_output(config, output_checkpoint, spm_model_file)
  weights = read_weights(input_checkpoint, config, input_format)
  if weights.config is not None:
    differences = configs.architecture_differences(weights.config, config)
    if differences:
      raise UserInputError(
          f"config.json next to {weights.path} disagrees with the given "
          "config: " + ", ".join(f"{k}: {a!r} vs {b!r}"
                                 for k, a, b in differences))
  if output_format == "official":
    write_official(weights.arrays, config, output_checkpoint)
    where = output_checkpoint
  elif output_format == "huggingface":
    where = write_huggingface(weights.arrays, config, output_checkpoint)
  elif output_format == "keras_hub":
    where = keras_hub_preset.write_preset(
        weights.arrays, config, output_checkpoint, spm_model_file,
        do_lower_case=do_lower_case)
  else:
    root = write_ours(weights.arrays, config, output_checkpoint)
    where = f"{output_checkpoint} (tf.train.Checkpoint({root}=...))"
    if weights.preset is not None:
      where += "; " + keras_hub_preset.write_companions(weights.preset,
                                                        output_checkpoint)
  heads = sorted({_head_of(n) for n in weights.arrays} - {None})
  return (f"converted {len(weights.arrays)} variables "
          f"(heads: {', '.join(heads) or 'none'}) from {weights.path} "
          f"({weights.format}) to {where} ({output_format})")
