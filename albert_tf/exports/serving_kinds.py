"""What an export's token-ids signature serves, one entry per kind, and how
a converted model (LiteRT, ONNX) is checked against it.

A kind is known by its signature's outputs (token_ids.py lists them): the
first entry of KINDS whose marker output it has (at the marker's rank,
when one is given; multiple choice's inputs have a choices axis). A new
serving export adds one entry (NER's is `token_classification`): its name,
marker, the outputs a converted file keeps (None: all) and its top class,
the per-example values whose equality is agreement between a float and a
quantized model.

Imports no TensorFlow.
"""

import dataclasses
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

Outputs = Dict[str, np.ndarray]


def _argmax_logits(outputs: Outputs) -> np.ndarray:
  return np.argmax(outputs["logits"], -1)[:, None]


def _span(outputs: Outputs) -> np.ndarray:
  return np.stack([np.argmax(outputs["start_logits"], -1),
                   np.argmax(outputs["end_logits"], -1)], -1)


def _beam(outputs: Outputs) -> np.ndarray:
  return np.stack([outputs["start_top_index"][:, 0],
                   outputs["end_top_index"][:, 0]], -1)


def _signs(outputs: Outputs) -> np.ndarray:
  return outputs["pooled_output"] > 0


def _labels_above_half(outputs: Outputs) -> np.ndarray:
  return outputs["probabilities"] > 0.5


def _tags(outputs: Outputs) -> np.ndarray:
  return np.argmax(outputs["tag_logits"], -1)


def _rounded(outputs: Outputs) -> np.ndarray:
  return np.round(outputs["predictions"], 1)[:, None]


@dataclasses.dataclass(frozen=True)
class ServingKind:
  """One kind of token-ids signature.

  Attributes:
    name: "encoder", "classifier", ... (a converted file's description).
    marker: an output only this kind (among those before it in KINDS) has.
    marker_rank: the marker's rank, batch included, when it decides.
    choices: the inputs are [batch, choices, seq] (multiple choice).
    kept_outputs: the outputs a converted file keeps, sorted; None: all.
    top_class: outputs -> per-example values (rows) whose equality is
      agreement.
    per_value: agreement counts each value of a row (the encoder has no
      classes: the share of pooled values with the same sign).
    from_outputs: False: the outputs do not tell it (a multi-label
      classifier's are a classifier's; its labels.json does, token_ids.py).
  """
  name: str
  marker: str
  top_class: Callable[[Outputs], np.ndarray]
  marker_rank: Optional[int] = None
  choices: bool = False
  kept_outputs: Optional[Tuple[str, ...]] = None
  per_value: bool = False
  from_outputs: bool = True


KINDS = (
    ServingKind("encoder", "pooled_output", _signs,
                kept_outputs=("pooled_output", "sequence_output"),
                per_value=True),
    ServingKind("squad_beam", "start_top_index", _beam),
    ServingKind("squad", "start_logits", _span),
    ServingKind("regression", "predictions", _rounded),
    ServingKind("token_classification", "tag_logits", _tags),
    ServingKind("race", "logits", _argmax_logits, choices=True),
    ServingKind("classifier", "logits", _argmax_logits, marker_rank=2),
    ServingKind("multi_label", "probabilities", _labels_above_half,
                from_outputs=False),
)
BY_NAME = {kind.name: kind for kind in KINDS}


def kind_of(output_ranks: Mapping[str, Optional[int]],
            choices: bool) -> Optional[ServingKind]:
  """The kind of a signature with these outputs ({name: rank}) and inputs
  with (or without) a choices axis; None if no entry fits."""
  for kind in KINDS:
    if (kind.from_outputs and kind.marker in output_ranks and
        kind.choices == choices and
        kind.marker_rank in (None, output_ranks[kind.marker])):
      return kind
  return None


def kept_outputs(kind: ServingKind, output_names: Sequence[str]
                 ) -> Tuple[str, ...]:
  """The outputs a converted file of this kind keeps, sorted."""
  return tuple(sorted(kind.kept_outputs or output_names))


def agreement(kind: str, a: Outputs, b: Outputs) -> float:
  """Fraction of examples whose top class is the same in a and b (encoder:
  of pooled values with the same sign)."""
  serving_kind = BY_NAME[kind]
  ta, tb = serving_kind.top_class(a), serving_kind.top_class(b)
  if serving_kind.per_value:
    return float(np.mean(ta == tb))
  return float(np.mean(np.all(ta == tb, axis=-1)))


def max_difference(a: Outputs, b: Outputs,
                   input_mask: Optional[np.ndarray] = None) -> float:
  """max |a - b| over the float outputs both have; with `input_mask`,
  an output whose leading axes are the mask's ([batch, seq]: a value per
  position) counts at the real positions only (padding is no one's
  output, and a length bucket does not compute it)."""
  differences = [0.0]
  for k in a:
    if k not in b or a[k].dtype.kind != "f":
      continue
    x, y = a[k].astype(np.float64), b[k].astype(np.float64)
    if (input_mask is not None and x.shape[:input_mask.ndim] ==
        input_mask.shape and y.shape == x.shape):
      x, y = x[input_mask > 0], y[input_mask > 0]
    differences.append(float(np.max(np.abs(x - y), initial=0.0)))
  return max(differences)


def sample_inputs(input_names: Sequence[str], input_shape: Sequence[int],
                  vocab_size: int, n: int = 16, seed: int = 0,
                  min_length: Optional[int] = None) -> Outputs:
  """Random-token int32 inputs [n, ...input_shape[1:]]: varied lengths
  (from min_length, default a quarter of the sequence, to all of it), two
  segments; SQuAD v2.0's p_mask where its answer-class model takes one."""
  rng = np.random.default_rng(seed)
  shape = (n,) + tuple(input_shape[1:])
  seq = shape[-1]
  low = max(2, seq // 4 if min_length is None else min_length)
  lengths = rng.integers(low, seq + 1, size=shape[:-1])[..., None]
  position = np.arange(seq)
  mask = (position < lengths).astype(np.int32)
  ids = rng.integers(5, vocab_size, size=shape).astype(np.int32) * mask
  types = ((position >= lengths // 2) & (mask > 0)).astype(np.int32)
  inputs = dict(input_word_ids=ids, input_mask=mask, input_type_ids=types)
  if "p_mask" in input_names:
    inputs["p_mask"] = (1 - types) | (1 - mask)
  return inputs


def batched(function: Callable[[Dict[str, np.ndarray]], Outputs],
            inputs: Dict[str, np.ndarray], size: int = 64) -> Outputs:
  """function over inputs in batches of `size` examples, concatenated."""
  n = len(next(iter(inputs.values())))
  parts = [function({k: v[i:i + size] for k, v in inputs.items()})
           for i in range(0, n, size)]
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
