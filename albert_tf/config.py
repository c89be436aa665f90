"""AlbertConfig: model hyperparameters, keyed like albert_config.json."""

import dataclasses
import json
from typing import Any, Dict, List, Mapping

from albert_common import file_io
from albert_common.errors import UserInputError

SHARE_PARAMETERS = ("all", "attention", "ffn", "none")

# hidden_act values and what they mean here. "gelu" is the tanh approximation,
# as in the official ALBERT code and its released configs; Hugging Face calls
# the same function "gelu_new" and uses "gelu" for the exact erf form, which we
# spell "gelu_exact" so that no string silently changes the numerics.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_exact", "relu",
               "tanh", "linear")


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
  """ALBERT hyperparameters.

  Field names are the keys of the official `albert_config.json`, so released
  config files load unchanged; `share_parameters` adds the paper's Table 4
  ablation. Keys this class does not know (e.g. `net_structure_type`,
  `layers_to_keep`) are kept in `extra` and written back by `to_json_file`.

  Args:
    vocab_size: int, size of the SentencePiece vocabulary V.
    embedding_size: int, width E of the factorized word embeddings.
    hidden_size: int, width H of the transformer layers.
    num_hidden_layers: int, number of layer applications L.
    num_hidden_groups: int, number of parameter groups G; layer l uses group
      int(l * G / L). L must be divisible by G.
    inner_group_num: int, transformer blocks applied per layer within a group.
    num_attention_heads: int, attention heads; must divide hidden_size.
    intermediate_size: int, feed-forward inner width.
    hidden_act: str, feed-forward activation; see ACTIVATIONS.
    hidden_dropout_prob: float in [0, 1), dropout on embeddings and sublayer
      outputs.
    attention_probs_dropout_prob: float in [0, 1), dropout on attention
      probabilities.
    max_position_embeddings: int, rows of the position table; the longest
      sequence the model accepts.
    type_vocab_size: int, number of segment ids.
    initializer_range: float, stddev of the truncated-normal initializer.
    share_parameters: "all" (ALBERT), "attention" (attention shared, FFN per
      layer), "ffn" (FFN shared, attention per layer) or "none" (BERT-like).
    extra: dict, unknown keys from the JSON file, kept verbatim.
  """

  vocab_size: int = 30000
  embedding_size: int = 128
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_hidden_groups: int = 1
  inner_group_num: int = 1
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.0
  attention_probs_dropout_prob: float = 0.0
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02
  share_parameters: str = "all"
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict,
                                               hash=False)

  def __post_init__(self):
    positive = ("vocab_size", "embedding_size", "hidden_size",
                "num_hidden_layers", "num_hidden_groups", "inner_group_num",
                "num_attention_heads", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")
    for name in positive:
      value = getattr(self, name)
      if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"AlbertConfig.{name} must be a positive integer, "
                         f"got {value!r}")
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(
          f"hidden_size ({self.hidden_size}) must be divisible by "
          f"num_attention_heads ({self.num_attention_heads})")
    if self.num_hidden_layers % self.num_hidden_groups:
      raise ValueError(
          f"num_hidden_layers ({self.num_hidden_layers}) must be divisible by "
          f"num_hidden_groups ({self.num_hidden_groups})")
    if self.share_parameters not in SHARE_PARAMETERS:
      raise ValueError(f"share_parameters must be one of {SHARE_PARAMETERS}, "
                       f"got {self.share_parameters!r}")
    if self.hidden_act not in ACTIVATIONS:
      raise ValueError(f"hidden_act must be one of {ACTIVATIONS}, "
                       f"got {self.hidden_act!r}")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, name)
      if not 0.0 <= value < 1.0:
        raise ValueError(f"AlbertConfig.{name} must be in [0, 1), "
                         f"got {value!r}")
    if self.initializer_range <= 0:
      raise ValueError("AlbertConfig.initializer_range must be positive, "
                       f"got {self.initializer_range!r}")

  @property
  def head_size(self) -> int:
    return self.hidden_size // self.num_attention_heads

  def group_of_layer(self, layer_index: int) -> int:
    """The parameter group layer `layer_index` uses, as the official model."""
    return int(layer_index * self.num_hidden_groups / self.num_hidden_layers)

  def sublayer_names(self, kind: str) -> List[List[str]]:
    """Per layer, the names of the `inner_group_num` sublayers of `kind`
    ("attention" or "ffn") it applies: AlbertEncoder's layer names, which
    checkpoint name tables read here without importing TensorFlow.

    A kind that `share_parameters` shares belongs to the layer's group,
    "group_{g}_inner_{k}_{kind}" (the same names in every layer of group g);
    otherwise to the layer, "layer_{l}_inner_{k}_{kind}".
    """
    shared = self.share_parameters in ("all", kind)
    owners = [f"group_{self.group_of_layer(index)}" if shared
              else f"layer_{index}" for index in range(self.num_hidden_layers)]
    return [[f"{owner}_inner_{k}_{kind}" for k in range(self.inner_group_num)]
            for owner in owners]

  def check_loopable(self) -> None:
    """ValueError unless every layer applies the same sublayers, so a loop
    (early exit) can apply one layer's blocks over and over."""
    for kind in ("attention", "ffn"):
      names = self.sublayer_names(kind)
      if any(layer != names[0] for layer in names):
        raise ValueError(
            "early exit loops over one shared layer: it needs "
            "share_parameters='all' and num_hidden_groups=1, received "
            f"share_parameters={self.share_parameters!r} and "
            f"num_hidden_groups={self.num_hidden_groups}")

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "AlbertConfig":
    values = dict(values)
    known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    extra = dict(values.pop("extra", {}))
    extra.update({k: values.pop(k) for k in list(values) if k not in known})
    return cls(**values, extra=extra)

  def to_dict(self) -> Dict[str, Any]:
    values = dataclasses.asdict(self)
    extra = values.pop("extra")
    values.update(extra)
    return values

  def to_json_string(self) -> str:
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  @classmethod
  def from_json_file(cls, path: str) -> "AlbertConfig":
    """Reads an official albert_config.json (or one we wrote).

    Raises:
      UserInputError: the file is missing, not JSON, or holds invalid values;
        the message names the file.
    """
    return cls.from_json_values(read_config_json(path), path)

  @classmethod
  def from_json_values(cls, values: Mapping[str, Any],
                       path: str) -> "AlbertConfig":
    """`from_dict` of the values read from `path` (UserInputError naming
    it when they are invalid)."""
    try:
      return cls.from_dict(values)
    except (TypeError, ValueError) as e:
      raise UserInputError(f"bad ALBERT config {path}: {e}") from e

  def to_json_file(self, path: str) -> None:
    """Writes the config (any filesystem; temporary name, then rename)."""
    file_io.write_atomic(path, self.to_json_string())


def read_config_json(path: str) -> dict:
  """The JSON object in a config file.

  Raises:
    UserInputError: missing, unreadable, not JSON or not an object; the
      message names `path`.
  """
  return file_io.read_json_object(path, "ALBERT config")
