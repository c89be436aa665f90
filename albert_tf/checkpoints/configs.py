"""Model configs in the official, Hugging Face and keras-hub spellings.

`load_albert_config(path)` reads either an official `albert_config.json` or a
Hugging Face `config.json` (recognised by `"model_type": "albert"` or its
`architectures` / `layer_norm_eps` keys). Activation names differ between the
two: Hugging Face `gelu_new` (and `gelu_pytorch_tanh`) is the tanh GELU the
official model calls `gelu`; Hugging Face `gelu` is the exact erf GELU, which
we spell `gelu_exact`. Nothing is renamed silently the other way either.

A keras-hub preset's `config.json` is an `AlbertBackbone` config
(`config_from_keras_hub`, `backbone_kwargs`); `albert_tf.json` next to it
(`KERAS_HUB_EXTRA_FILE`, `read_keras_hub_extra`) holds what keras-hub's
config cannot: both dropout rates and the initializer range. keras-hub can
express only `share_parameters="all"` and the tanh GELU
(`check_keras_hub_expressible`).
"""

import json
from typing import Any, Dict, Mapping, Optional

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.config import read_config_json

_FROM_HF_ACT = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu_fast": None, "gelu": "gelu_exact", "relu": "relu",
                "tanh": "tanh", "linear": "linear"}
_TO_HF_ACT = {"gelu": "gelu_new", "gelu_new": "gelu_new",
              "gelu_pytorch_tanh": "gelu_new", "gelu_exact": "gelu",
              "relu": "relu", "tanh": "tanh", "linear": "linear"}

# The keras-hub preset file with what keras-hub's config.json cannot hold.
KERAS_HUB_EXTRA_FILE = "albert_tf.json"
KERAS_HUB_BACKBONE = "AlbertBackbone"

# AlbertConfig fields that Hugging Face spells the same way.
_SHARED_KEYS = ("vocab_size", "embedding_size", "hidden_size",
                "num_hidden_layers", "num_hidden_groups", "inner_group_num",
                "num_attention_heads", "intermediate_size",
                "hidden_dropout_prob", "attention_probs_dropout_prob",
                "max_position_embeddings", "type_vocab_size",
                "initializer_range")

# Fields that change the function the model computes (dropout does not).
ARCHITECTURE_KEYS = tuple(k for k in _SHARED_KEYS if "dropout" not in k) + (
    "hidden_act", "share_parameters")


def is_huggingface_config(values: Mapping[str, Any]) -> bool:
  return (values.get("model_type") == "albert" or "architectures" in values
          or "layer_norm_eps" in values)


def config_from_huggingface(values: Mapping[str, Any],
                            source: str = "config.json") -> AlbertConfig:
  """AlbertConfig from a Hugging Face ALBERT config dict.

  Raises:
    UserInputError: not an ALBERT config, or settings this model cannot
      reproduce (layer_norm_eps != 1e-12, relative position embeddings, an
      unknown activation); the message names `source`.
  """
  if values.get("model_type", "albert") != "albert":
    raise UserInputError(f"{source}: model_type is {values['model_type']!r}, "
                         "not 'albert'")
  act = values.get("hidden_act", "gelu_new")
  if _FROM_HF_ACT.get(act) is None:
    supported = sorted(k for k, v in _FROM_HF_ACT.items() if v)
    raise UserInputError(f"{source}: hidden_act {act!r} is not supported; "
                         f"expected one of {supported}")
  eps = values.get("layer_norm_eps", 1e-12)
  if abs(eps - 1e-12) > 1e-15:
    raise UserInputError(f"{source}: layer_norm_eps={eps}; this model uses "
                         "1e-12 as the official ALBERT")
  position = values.get("position_embedding_type", "absolute")
  if position != "absolute":
    raise UserInputError(f"{source}: position_embedding_type={position!r}; "
                         "only 'absolute' is supported")
  fields = {k: values[k] for k in _SHARED_KEYS if k in values}
  fields["hidden_act"] = _FROM_HF_ACT[act]
  try:
    return AlbertConfig.from_dict(fields)
  except (TypeError, ValueError) as e:
    raise UserInputError(f"bad ALBERT config {source}: {e}") from e


def config_to_huggingface(config: AlbertConfig,
                          architectures=("AlbertForPreTraining",)
                          ) -> Dict[str, Any]:
  """A transformers `config.json` dict for `config` (share_parameters="all")."""
  if config.share_parameters != "all":
    raise UserInputError(
        "Hugging Face ALBERT can only express share_parameters='all'; this "
        f"config has {config.share_parameters!r}")
  values = {k: getattr(config, k) for k in _SHARED_KEYS}
  values.update(
      model_type="albert", architectures=list(architectures),
      hidden_act=_TO_HF_ACT[config.hidden_act], layer_norm_eps=1e-12,
      position_embedding_type="absolute", classifier_dropout_prob=0.1,
      pad_token_id=0, bos_token_id=2, eos_token_id=3)
  return values


def load_albert_config(path: str) -> AlbertConfig:
  """An official albert_config.json, a Hugging Face config.json or the
  config.json of a keras-hub ALBERT preset.

  Raises:
    UserInputError: missing, not JSON, or invalid; the message names `path`.
  """
  values = read_config_json(path)
  if is_huggingface_config(values):
    return config_from_huggingface(values, source=path)
  if is_keras_hub_config(values):  # a preset's config.json
    return config_from_keras_hub(values, read_keras_hub_extra(path),
                                 source=path)
  return AlbertConfig.from_json_values(values, path)  # read once


def is_keras_hub_config(values: Mapping[str, Any]) -> bool:
  """Whether a config.json dict is a keras-hub (Albert)Backbone config."""
  return ("class_name" in values and "config" in values and
          "keras_hub" in str(values.get("registered_name", "")) +
          str(values.get("module", "")))


def check_keras_hub_expressible(config: AlbertConfig) -> None:
  """UserInputError unless keras-hub's AlbertBackbone can express `config`."""
  problems = []
  if config.share_parameters != "all":
    problems.append(f"share_parameters={config.share_parameters!r} (keras-hub "
                    "shares whole blocks in groups: only 'all')")
  if config.hidden_act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
    problems.append(f"hidden_act={config.hidden_act!r} (keras-hub uses the "
                    "tanh GELU, our 'gelu')")
  if config.embedding_size == config.hidden_size:
    problems.append(f"embedding_size == hidden_size ({config.hidden_size}): "
                    "keras-hub always applies an embedding projection, this "
                    "model has none")
  if problems:
    raise UserInputError("a keras-hub ALBERT preset cannot express this "
                         "config: " + "; ".join(problems))


def backbone_kwargs(config: AlbertConfig) -> Dict[str, Any]:
  """keras_hub.models.AlbertBackbone arguments for `config`."""
  check_keras_hub_expressible(config)
  return dict(vocabulary_size=config.vocab_size,
              num_layers=config.num_hidden_layers,
              num_heads=config.num_attention_heads,
              embedding_dim=config.embedding_size,
              hidden_dim=config.hidden_size,
              intermediate_dim=config.intermediate_size,
              num_groups=config.num_hidden_groups,
              num_inner_repetitions=config.inner_group_num,
              dropout=config.hidden_dropout_prob,
              max_sequence_length=config.max_position_embeddings,
              num_segments=config.type_vocab_size)


def config_from_keras_hub(values: Mapping[str, Any],
                          extra: Optional[Mapping[str, Any]] = None,
                          source: str = "config.json") -> AlbertConfig:
  """AlbertConfig from a keras-hub backbone config (+ our albert_tf.json)."""
  if values.get("class_name") != KERAS_HUB_BACKBONE:
    raise UserInputError(f"{source}: a keras-hub {values.get('class_name')}, "
                         f"not an {KERAS_HUB_BACKBONE}")
  c = values["config"]
  extra = extra or {}
  try:
    return AlbertConfig(
        vocab_size=c["vocabulary_size"], embedding_size=c["embedding_dim"],
        hidden_size=c["hidden_dim"], num_hidden_layers=c["num_layers"],
        num_hidden_groups=c.get("num_groups", 1),
        inner_group_num=c.get("num_inner_repetitions", 1),
        num_attention_heads=c["num_heads"],
        intermediate_size=c["intermediate_dim"], hidden_act="gelu",
        hidden_dropout_prob=extra.get("hidden_dropout_prob",
                                      c.get("dropout", 0.0)),
        attention_probs_dropout_prob=extra.get(
            "attention_probs_dropout_prob", c.get("dropout", 0.0)),
        max_position_embeddings=c.get("max_sequence_length", 512),
        type_vocab_size=c.get("num_segments", 2),
        initializer_range=extra.get("initializer_range", 0.02))
  except (KeyError, TypeError, ValueError) as e:
    raise UserInputError(f"bad keras-hub AlbertBackbone config {source}: "
                         f"{e!r}") from e


def read_keras_hub_extra(config_file: str) -> Dict[str, Any]:
  """albert_tf.json next to a preset's config.json, or {}."""
  extra_file = file_io.join(file_io.dirname(config_file) or ".",
                            KERAS_HUB_EXTRA_FILE)
  if not file_io.exists(extra_file):
    return {}
  try:
    return json.loads(file_io.read_text(extra_file))
  except ValueError as e:
    raise UserInputError(f"bad {extra_file}: {e}") from e


def architecture_differences(a: AlbertConfig, b: AlbertConfig):
  """[(field, a value, b value)] for fields that change the computation."""
  return [(k, getattr(a, k), getattr(b, k)) for k in ARCHITECTURE_KEYS
          if _canonical_act(k, getattr(a, k)) !=
          _canonical_act(k, getattr(b, k))]


def _canonical_act(key, value):
  if key == "hidden_act":
    return {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}.get(value, value)
  return value
