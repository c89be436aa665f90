"""Model configs in the official and Hugging Face spellings.

`load_albert_config(path)` reads either an official `albert_config.json` or a
Hugging Face `config.json` (recognised by `"model_type": "albert"` or its
`architectures` / `layer_norm_eps` keys). Activation names differ between the
two: Hugging Face `gelu_new` (and `gelu_pytorch_tanh`) is the tanh GELU the
official model calls `gelu`; Hugging Face `gelu` is the exact erf GELU, which
we spell `gelu_exact`. Nothing is renamed silently the other way either.
"""

from typing import Any, Dict, Mapping

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.config import read_config_json

_FROM_HF_ACT = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu_fast": None, "gelu": "gelu_exact", "relu": "relu",
                "tanh": "tanh", "linear": "linear"}
_TO_HF_ACT = {"gelu": "gelu_new", "gelu_new": "gelu_new",
              "gelu_pytorch_tanh": "gelu_new", "gelu_exact": "gelu",
              "relu": "relu", "tanh": "tanh", "linear": "linear"}

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
  from albert_tf.checkpoints import keras_hub_preset
  if keras_hub_preset.is_keras_hub_config(values):  # a preset's config.json
    return keras_hub_preset.config_from_keras_hub(
        values, keras_hub_preset.read_extra(path), source=path)
  return AlbertConfig.from_json_file(path)


def architecture_differences(a: AlbertConfig, b: AlbertConfig):
  """[(field, a value, b value)] for fields that change the computation."""
  return [(k, getattr(a, k), getattr(b, k)) for k in ARCHITECTURE_KEYS
          if _canonical_act(k, getattr(a, k)) !=
          _canonical_act(k, getattr(b, k))]


def _canonical_act(key, value):
  if key == "hidden_act":
    return {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}.get(value, value)
  return value
