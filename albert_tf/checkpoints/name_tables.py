"""Declarative name tables: other checkpoint layouts <-> our variable names.

One table per source layout, generated for a config (any num_hidden_groups,
inner_group_num; the official and Hugging Face layouts can only express
share_parameters="all"). A table is a list of `Entry(ours, theirs, kind)`:
`ours` is a canonical name (see below), `theirs` the source name, `kind` the
transform between the two layouts (see `TRANSFORMS`).

Canonical names are our variable names without ":0", relative to the encoder
(e.g. "embeddings/word_embeddings/embeddings",
"group_0_inner_0_attention/self_attention/query/kernel", "pooler/kernel") and
to the pretraining heads ("masked_lm/transform/kernel", "masked_lm/output_bias",
"sentence_order/dense/kernel"), as `AlbertEncoder` / `AlbertPretrainer` create
them.

Layouts:
  official: google-research/albert modeling.py (released TF1 checkpoints),
    e.g. "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/
    query/kernel" [H, H].
  huggingface: transformers' AlbertForPreTraining state dict keys, e.g.
    "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.
    weight" [H_out, H_in] (torch Linear weights are [out, in]).
  garden: variable names of Model Garden's `networks.AlbertEncoder` (one
    shared layer), e.g. "transformer/self_attention/query/kernel" [H, N, d].
"""

import dataclasses
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

import numpy as np

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

Shape = Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Transform:
  """How an array moves between a source layout and ours.

  to_ours / from_ours map arrays; source_shape maps our shape to the shape
  the source layout stores (used to report shape mismatches before moving
  any data).
  """
  to_ours: Callable[[np.ndarray, Shape], np.ndarray]
  from_ours: Callable[[np.ndarray], np.ndarray]
  source_shape: Callable[[Shape], Shape]


def _merge_last_two(x):  # (a, N, d) -> (a, N*d);  (N, d) -> (N*d,)
  return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


TRANSFORMS: Dict[str, Transform] = {
    # Same array in both layouts.
    "copy": Transform(lambda x, shape: x, lambda x: x, lambda shape: shape),
    # q/k/v kernel: theirs [H, H] <-> ours [H, N, d].
    "heads_in_kernel": Transform(
        lambda x, shape: x.reshape(shape), _merge_last_two,
        lambda shape: (shape[0], shape[1] * shape[2])),
    # q/k/v bias: theirs [H] <-> ours [N, d].
    "heads_bias": Transform(
        lambda x, shape: x.reshape(shape), _merge_last_two,
        lambda shape: (shape[0] * shape[1],)),
    # attention output kernel: theirs [H, H] <-> ours [N, d, H].
    "heads_out_kernel": Transform(
        lambda x, shape: x.reshape(shape),
        lambda x: x.reshape((x.shape[0] * x.shape[1], x.shape[2])),
        lambda shape: (shape[0] * shape[1], shape[2])),
    # 2-D transpose: official seq_relationship [2, H] and torch Linear
    # weights [out, in] <-> our Dense kernels [in, out].
    "transpose": Transform(
        lambda x, shape: np.ascontiguousarray(x.T),
        lambda x: np.ascontiguousarray(x.T), lambda shape: shape[::-1]),
    # torch q/k/v weight [H_out, H_in] <-> ours [H_in, N, d].
    "linear_heads_in": Transform(
        lambda x, shape: np.ascontiguousarray(x.T).reshape(shape),
        lambda x: np.ascontiguousarray(_merge_last_two(x).T),
        lambda shape: (shape[1] * shape[2], shape[0])),
    # torch attention output weight [H_out, H_in] <-> ours [N, d, H_out].
    "linear_heads_out": Transform(
        lambda x, shape: np.ascontiguousarray(x.T).reshape(shape),
        lambda x: np.ascontiguousarray(
            x.reshape((x.shape[0] * x.shape[1], x.shape[2])).T),
        lambda shape: (shape[2], shape[0] * shape[1])),
}


@dataclasses.dataclass(frozen=True)
class Entry:
  ours: str
  theirs: str
  kind: str = "copy"

  @property
  def transform(self) -> Transform:
    return TRANSFORMS[self.kind]


# Names of the pretraining heads' variables (canonical), by head.
HEAD_PREFIXES = ("masked_lm/", "sentence_order/")


def is_head(name: str) -> bool:
  return name.startswith(HEAD_PREFIXES)


def head_of(name: str) -> Optional[str]:
  """"masked_lm" or "sentence_order" for a head's canonical name, else None."""
  for prefix in HEAD_PREFIXES:
    if name.startswith(prefix):
      return prefix[:-1]
  return None


def heads_in(names: Iterable[str]) -> Set[str]:
  """The pretraining heads among canonical `names`: a subset of
  {"masked_lm", "sentence_order"}."""
  return {head_of(n) for n in names} - {None}


def our_shapes(config: AlbertConfig,
               with_heads: bool = True) -> Dict[str, Shape]:
  """Canonical name -> shape of every AlbertEncoder (+ head) variable."""
  v, e, h, i = (config.vocab_size, config.embedding_size, config.hidden_size,
                config.intermediate_size)
  n, d = config.num_attention_heads, config.head_size
  shapes = {"embeddings/word_embeddings/embeddings": (v, e),
            "embeddings/token_type_embeddings/embeddings":
                (config.type_vocab_size, e),
            "embeddings/position_embeddings":
                (config.max_position_embeddings, e),
            "embeddings/layer_norm/gamma": (e,),
            "embeddings/layer_norm/beta": (e,)}
  if e != h:
    shapes["embeddings/embedding_projection/kernel"] = (e, h)
    shapes["embeddings/embedding_projection/bias"] = (h,)
  for prefix in _sublayer_prefixes(config, "attention"):
    for p in ("query", "key", "value"):
      shapes[f"{prefix}/self_attention/{p}/kernel"] = (h, n, d)
      shapes[f"{prefix}/self_attention/{p}/bias"] = (n, d)
    shapes[f"{prefix}/self_attention/attention_output/kernel"] = (n, d, h)
    shapes[f"{prefix}/self_attention/attention_output/bias"] = (h,)
    shapes[f"{prefix}/layer_norm/gamma"] = (h,)
    shapes[f"{prefix}/layer_norm/beta"] = (h,)
  for prefix in _sublayer_prefixes(config, "ffn"):
    shapes[f"{prefix}/intermediate/kernel"] = (h, i)
    shapes[f"{prefix}/intermediate/bias"] = (i,)
    shapes[f"{prefix}/output/kernel"] = (i, h)
    shapes[f"{prefix}/output/bias"] = (h,)
    shapes[f"{prefix}/layer_norm/gamma"] = (h,)
    shapes[f"{prefix}/layer_norm/beta"] = (h,)
  shapes["pooler/kernel"] = (h, h)
  shapes["pooler/bias"] = (h,)
  if with_heads:
    shapes.update({"masked_lm/transform/kernel": (h, e),
                   "masked_lm/transform/bias": (e,),
                   "masked_lm/layer_norm/gamma": (e,),
                   "masked_lm/layer_norm/beta": (e,),
                   "masked_lm/output_bias": (v,),
                   "sentence_order/dense/kernel": (h, 2),
                   "sentence_order/dense/bias": (2,)})
  return shapes


def _sublayer_prefixes(config: AlbertConfig, kind: str) -> List[str]:
  """Our distinct sublayer names of `kind`, in the order AlbertEncoder
  builds them."""
  return list(dict.fromkeys(name for names in config.sublayer_names(kind)
                            for name in names))


def _group_blocks(config: AlbertConfig) -> List[Tuple[int, int, str, str]]:
  """(g, k, our attention name, our ffn name) for the block applied k-th in
  group g, for the layouts that name blocks by group (share_parameters
  "all": blocks are built group by group)."""
  blocks = zip(_sublayer_prefixes(config, "attention"),
               _sublayer_prefixes(config, "ffn"))
  return [divmod(index, config.inner_group_num) + names
          for index, names in enumerate(blocks)]


def _require_all_shared(config: AlbertConfig, layout: str) -> None:
  if config.share_parameters != "all":
    raise UserInputError(
        f"the {layout} checkpoint layout can only express "
        f'share_parameters="all" (groups of shared blocks); this config has '
        f"share_parameters={config.share_parameters!r}. Keep such models in "
        "our checkpoint format (--output_format=ours)")


def official_table(config: AlbertConfig) -> List[Entry]:
  """google-research/albert modeling.py names (released TF1 checkpoints)."""
  _require_all_shared(config, "official")
  t = [Entry("embeddings/word_embeddings/embeddings",
             "bert/embeddings/word_embeddings"),
       Entry("embeddings/token_type_embeddings/embeddings",
             "bert/embeddings/token_type_embeddings"),
       Entry("embeddings/position_embeddings",
             "bert/embeddings/position_embeddings"),
       Entry("embeddings/layer_norm/gamma", "bert/embeddings/LayerNorm/gamma"),
       Entry("embeddings/layer_norm/beta", "bert/embeddings/LayerNorm/beta")]
  if config.embedding_size != config.hidden_size:
    t += [Entry(f"embeddings/embedding_projection/{w}",
                f"bert/encoder/embedding_hidden_mapping_in/{w}")
          for w in ("kernel", "bias")]
  for g, k, att, ffn in _group_blocks(config):
    src = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
    for p in ("query", "key", "value"):
      t += [Entry(f"{att}/self_attention/{p}/kernel",
                  f"{src}/attention_1/self/{p}/kernel", "heads_in_kernel"),
            Entry(f"{att}/self_attention/{p}/bias",
                  f"{src}/attention_1/self/{p}/bias", "heads_bias")]
    t += [Entry(f"{att}/self_attention/attention_output/kernel",
                f"{src}/attention_1/output/dense/kernel", "heads_out_kernel"),
          Entry(f"{att}/self_attention/attention_output/bias",
                f"{src}/attention_1/output/dense/bias"),
          Entry(f"{att}/layer_norm/gamma", f"{src}/LayerNorm/gamma"),
          Entry(f"{att}/layer_norm/beta", f"{src}/LayerNorm/beta")]
    for w in ("kernel", "bias"):
      t += [Entry(f"{ffn}/intermediate/{w}",
                  f"{src}/ffn_1/intermediate/dense/{w}"),
            Entry(f"{ffn}/output/{w}",
                  f"{src}/ffn_1/intermediate/output/dense/{w}")]
    t += [Entry(f"{ffn}/layer_norm/gamma", f"{src}/LayerNorm_1/gamma"),
          Entry(f"{ffn}/layer_norm/beta", f"{src}/LayerNorm_1/beta")]
  t += [Entry("pooler/kernel", "bert/pooler/dense/kernel"),
        Entry("pooler/bias", "bert/pooler/dense/bias"),
        Entry("masked_lm/transform/kernel",
              "cls/predictions/transform/dense/kernel"),
        Entry("masked_lm/transform/bias",
              "cls/predictions/transform/dense/bias"),
        Entry("masked_lm/layer_norm/gamma",
              "cls/predictions/transform/LayerNorm/gamma"),
        Entry("masked_lm/layer_norm/beta",
              "cls/predictions/transform/LayerNorm/beta"),
        Entry("masked_lm/output_bias", "cls/predictions/output_bias"),
        Entry("sentence_order/dense/kernel",
              "cls/seq_relationship/output_weights", "transpose"),
        Entry("sentence_order/dense/bias", "cls/seq_relationship/output_bias")]
  return t


def huggingface_table(config: AlbertConfig) -> List[Entry]:
  """transformers AlbertForPreTraining keys (with the "albert." prefix)."""
  _require_all_shared(config, "Hugging Face")
  if config.embedding_size == config.hidden_size:
    # transformers always has embedding_hidden_mapping_in; we (and the
    # official model) have no projection when E == H.
    raise UserInputError(
        f"embedding_size == hidden_size ({config.hidden_size}): Hugging Face "
        "ALBERT always applies embedding_hidden_mapping_in, this model has no "
        "such projection; the weights cannot be mapped exactly")
  e = "albert.embeddings"
  t = [Entry("embeddings/word_embeddings/embeddings",
             f"{e}.word_embeddings.weight"),
       Entry("embeddings/token_type_embeddings/embeddings",
             f"{e}.token_type_embeddings.weight"),
       Entry("embeddings/position_embeddings",
             f"{e}.position_embeddings.weight"),
       Entry("embeddings/layer_norm/gamma", f"{e}.LayerNorm.weight"),
       Entry("embeddings/layer_norm/beta", f"{e}.LayerNorm.bias"),
       Entry("embeddings/embedding_projection/kernel",
             "albert.encoder.embedding_hidden_mapping_in.weight", "transpose"),
       Entry("embeddings/embedding_projection/bias",
             "albert.encoder.embedding_hidden_mapping_in.bias")]
  for g, k, att, ffn in _group_blocks(config):
    src = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{k}"
    for p in ("query", "key", "value"):
      t += [Entry(f"{att}/self_attention/{p}/kernel",
                  f"{src}.attention.{p}.weight", "linear_heads_in"),
            Entry(f"{att}/self_attention/{p}/bias",
                  f"{src}.attention.{p}.bias", "heads_bias")]
    t += [Entry(f"{att}/self_attention/attention_output/kernel",
                f"{src}.attention.dense.weight", "linear_heads_out"),
          Entry(f"{att}/self_attention/attention_output/bias",
                f"{src}.attention.dense.bias"),
          Entry(f"{att}/layer_norm/gamma", f"{src}.attention.LayerNorm.weight"),
          Entry(f"{att}/layer_norm/beta", f"{src}.attention.LayerNorm.bias"),
          Entry(f"{ffn}/intermediate/kernel", f"{src}.ffn.weight", "transpose"),
          Entry(f"{ffn}/intermediate/bias", f"{src}.ffn.bias"),
          Entry(f"{ffn}/output/kernel", f"{src}.ffn_output.weight",
                "transpose"),
          Entry(f"{ffn}/output/bias", f"{src}.ffn_output.bias"),
          Entry(f"{ffn}/layer_norm/gamma",
                f"{src}.full_layer_layer_norm.weight"),
          Entry(f"{ffn}/layer_norm/beta", f"{src}.full_layer_layer_norm.bias")]
  t += [Entry("pooler/kernel", "albert.pooler.weight", "transpose"),
        Entry("pooler/bias", "albert.pooler.bias"),
        Entry("masked_lm/transform/kernel", "predictions.dense.weight",
              "transpose"),
        Entry("masked_lm/transform/bias", "predictions.dense.bias"),
        Entry("masked_lm/layer_norm/gamma", "predictions.LayerNorm.weight"),
        Entry("masked_lm/layer_norm/beta", "predictions.LayerNorm.bias"),
        Entry("masked_lm/output_bias", "predictions.bias"),
        Entry("sentence_order/dense/kernel",
              "sop_classifier.classifier.weight", "transpose"),
        Entry("sentence_order/dense/bias", "sop_classifier.classifier.bias")]
  return t


# transformers ties these to other tensors; a file may hold them or not. When
# present they must equal the tensor they are tied to (theirs names).
HUGGINGFACE_TIED = {
    "predictions.decoder.weight": "albert.embeddings.word_embeddings.weight",
    "predictions.decoder.bias": "predictions.bias",
}
# Buffers, not weights.
HUGGINGFACE_BUFFERS = ("albert.embeddings.position_ids",
                       "albert.embeddings.token_type_ids")


def garden_table(config: AlbertConfig) -> List[Entry]:
  """Model Garden `networks.AlbertEncoder` variable names (one shared layer)."""
  if (config.share_parameters != "all" or config.num_hidden_groups != 1 or
      config.inner_group_num != 1):
    raise UserInputError(
        "Model Garden's AlbertEncoder has one shared transformer block; this "
        f"config has num_hidden_groups={config.num_hidden_groups}, "
        f"inner_group_num={config.inner_group_num}, "
        f"share_parameters={config.share_parameters!r}")
  renames = (
      ("embeddings/word_embeddings/embeddings", "word_embeddings/embeddings"),
      ("embeddings/token_type_embeddings/embeddings",
       "type_embeddings/embeddings"),
      ("embeddings/position_embeddings", "position_embedding/embeddings"),
      ("embeddings/layer_norm/", "embeddings/layer_norm/"),
      ("embeddings/embedding_projection/", "embedding_projection/"),
      ("group_0_inner_0_attention/self_attention/",
       "transformer/self_attention/"),
      ("group_0_inner_0_attention/layer_norm/",
       "transformer/self_attention_layer_norm/"),
      ("group_0_inner_0_ffn/intermediate/", "transformer/intermediate/"),
      ("group_0_inner_0_ffn/output/", "transformer/output/"),
      ("group_0_inner_0_ffn/layer_norm/", "transformer/output_layer_norm/"),
      ("pooler/", "pooler_transform/"),
  )
  t = []
  for name in our_shapes(config, with_heads=False):
    for ours, theirs in renames:
      if name.startswith(ours):
        t.append(Entry(name, theirs + name[len(ours):]))
        break
    else:  # pragma: no cover - the table covers every encoder variable
      raise AssertionError(f"no Model Garden name for {name}")
  return t


TABLES = {"official": official_table, "huggingface": huggingface_table,
          "garden": garden_table}


def table_for(layout: str, config: AlbertConfig) -> List[Entry]:
  return TABLES[layout](config)
