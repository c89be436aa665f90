"""Task-head name tables: our heads' canonical names and the other layouts'.

The other layouts' names and shapes are listed here independently of the
library (from transformers' modeling_albert.py and google-research/albert's
classifier_utils.py, squad_utils.py, race_utils.py).
"""

import numpy as np
import pytest

from albert_common.errors import UserInputError
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints.task_models import head_tables

H, C = 8, 3

THEIRS = {  # (layout, kind) -> their name -> shape
    ("huggingface", "classifier"): {"classifier.weight": (C, H),
                                    "classifier.bias": (C,)},
    ("huggingface", "token_classifier"): {"classifier.weight": (C, H),
                                          "classifier.bias": (C,)},
    ("huggingface", "span"): {"qa_outputs.weight": (2, H),
                              "qa_outputs.bias": (2,)},
    ("huggingface", "multiple_choice"): {"classifier.weight": (1, H),
                                         "classifier.bias": (1,)},
    ("official", "classifier"): {"output_weights": (C, H),
                                 "output_bias": (C,)},
    ("official", "span"): {"cls/squad/output_weights": (2, H),
                           "cls/squad/output_bias": (2,)},
    ("official", "multiple_choice"): {"output_weights": (1, H),
                                      "output_bias": (1,)},
    ("official", "squad_v2"): {
        "start_logits/dense/kernel": (H, 1),
        "start_logits/dense/bias": (1,),
        "end_logits/dense_0/kernel": (2 * H, H),
        "end_logits/dense_0/bias": (H,),
        "end_logits/LayerNorm/gamma": (H,),
        "end_logits/LayerNorm/beta": (H,),
        "end_logits/dense_1/kernel": (H, 1),
        "end_logits/dense_1/bias": (1,),
        "answer_class/dense_0/kernel": (2 * H, H),
        "answer_class/dense_0/bias": (H,),
        "answer_class/dense_1/kernel": (H, 1)},
}


@pytest.mark.parametrize("layout,kind", sorted(THEIRS))
def test_head_table_round_trips_arrays(layout, kind):
  """ours -> theirs (their names and shapes) -> ours, exactly; a dense
  layer's [out, in] weight is our kernel transposed."""
  shapes = head_tables.head_shapes(kind, H, C)
  rng = np.random.default_rng(0)
  ours = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
  table = head_tables.head_table(layout, kind)
  theirs = mapping.map_from_ours(ours, table)
  assert {n: a.shape for n, a in theirs.items()} == THEIRS[layout, kind]
  back = mapping.map_to_ours(theirs, table, shapes, source_name="x",
                             layout=layout)
  assert set(back) == set(ours)
  for name in ours:
    np.testing.assert_array_equal(back[name], ours[name])
  weight = [n for n in theirs if n.endswith(("weight", "output_weights"))]
  for name in weight:  # [out, in] = our kernel's transpose
    kernel = ours[f"{kind}/dense/kernel"]
    np.testing.assert_array_equal(theirs[name], kernel.T)
  assert kind in head_tables.kinds_matching(layout, theirs)


def test_detection_by_names():
  """The names tell the head, or the heads they can be."""
  assert head_tables.kinds_matching("huggingface", ["qa_outputs.weight"]) == [
      "span"]
  assert head_tables.kinds_matching(
      "huggingface", ["classifier.weight", "classifier.bias"]) == [
          "classifier", "token_classifier", "multiple_choice"]
  assert head_tables.kinds_matching("official", ["output_weights"]) == [
      "classifier", "multiple_choice"]
  assert head_tables.kinds_matching(
      "official", ["start_logits/dense/kernel"]) == ["squad_v2"]
  assert not head_tables.kinds_matching("official", ["bert/pooler/dense/bias"])
  assert head_tables.kind_of("classifier/dense/kernel") == "classifier"
  assert head_tables.kind_of("pooler/kernel") is None


def test_layout_without_the_head_is_one_clear_error():
  with pytest.raises(UserInputError,
                     match="official layout cannot hold a token"):
    head_tables.head_table("official", "token_classifier")
  with pytest.raises(UserInputError, match="huggingface layout cannot hold "
                                           "the official SQuAD v2.0 head"):
    head_tables.head_table("huggingface", "squad_v2")


def test_our_task_models_heads_have_the_canonical_names(tiny_config):
  """Each task model's head variables under the canonical names, with the
  shapes head_shapes gives."""
  from albert_tf.models import AlbertClassifier
  from albert_tf.models import AlbertMultipleChoice
  from albert_tf.models import AlbertSpanLabeler
  from albert_tf.models import AlbertSquadV2
  from albert_tf.models import AlbertTokenClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  h = tiny_config.hidden_size
  models = {
      "classifier": AlbertClassifier(AlbertEncoder(tiny_config), 5),
      "token_classifier": AlbertTokenClassifier(AlbertEncoder(tiny_config),
                                                5),
      "span": AlbertSpanLabeler(AlbertEncoder(tiny_config)),
      "multiple_choice": AlbertMultipleChoice(AlbertEncoder(tiny_config), 4),
      "squad_v2": AlbertSquadV2(AlbertEncoder(tiny_config)),
  }
  for kind, model in models.items():
    found, variables = model_variables.task_head(model)
    assert found == kind
    assert {n: tuple(v.shape) for n, v in variables.items()} == (
        head_tables.head_shapes(kind, h, 5))
    everything = model_variables.canonical_variables(model)
    assert set(variables) <= set(everything)
    # Every weight of the model has a canonical name.
    assert len(everything) == len(model.weights) - len(
        [v for v in model.weights if "seed" in v.name or "rng" in v.name])
