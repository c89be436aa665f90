"""Each ablation patches code the training step runs: while the step is
built and traced, the variant's replacement is called (else its row would
time the unchanged step and measure nothing)."""

import functools
from unittest import mock

import pytest

from albert_tf.config import AlbertConfig
from benchmarks import common
from benchmarks.investigations import ablations
from benchmarks.pretraining import step as pretraining_step

# variant -> the ablations function it puts in place of ours
REPLACEMENTS = {
    "last block over the whole sequence": "_full_last_block_call",
    "GELU in its tanh form": "_gelu_tanh_form",
    "[batch, seq, seq] attention mask": "_full_mask_bias",
}


def test_every_variant_has_a_replacement():
  assert set(REPLACEMENTS) == set(ablations.VARIANTS) - {"all optimisations"}


@pytest.mark.parametrize("name", sorted(REPLACEMENTS))
def test_the_training_step_runs_the_replacement(name):
  config = AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32)
  batch = pretraining_step.synthetic_batch(config, 2, 16, predictions=3)
  attribute = REPLACEMENTS[name]
  replacement = getattr(ablations, attribute)
  calls = []

  @functools.wraps(replacement)
  def counted(*args, **kwargs):
    calls.append(attribute)
    return replacement(*args, **kwargs)

  with mock.patch.object(ablations, attribute, counted):
    with ablations.VARIANTS[name]():
      step = pretraining_step.ours_step(config, batch, False)
      common.wait_for(step())
  assert calls, f"{name}: the step never called {attribute}"
