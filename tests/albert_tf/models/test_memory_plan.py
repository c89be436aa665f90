"""The memory plan: its figures against the real variables, and the CLI."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import memory_plan
from albert_tf import optimization
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining import objective

ROOT = os.path.abspath(os.path.join(__file__, "../../../.."))
BASE = os.path.join(ROOT, "configs", "albert_base.json")


def _bytes(tensors):
  return sum(4 * int(np.prod(t.shape)) for t in tensors)


@pytest.mark.parametrize("optimizer", ["lamb", "adamw"])
def test_weights_slots_and_gradients_equal_the_real_tensors(tiny_config,
                                                            optimizer):
  config = dataclasses.replace(tiny_config, num_hidden_layers=4,
                               num_hidden_groups=2,
                               share_parameters="attention")
  model = AlbertPretrainer(AlbertEncoder(config))
  batch, seq, predictions = 4, 12, 3
  rng = np.random.default_rng(0)
  features = dict(
      input_word_ids=rng.integers(5, 97, (batch, seq)).astype(np.int32),
      input_mask=np.ones((batch, seq), np.int32),
      input_type_ids=np.zeros((batch, seq), np.int32),
      masked_lm_positions=np.tile(np.arange(1, 1 + predictions), (batch, 1)),
      masked_lm_ids=rng.integers(5, 97, (batch, predictions)),
      masked_lm_weights=np.ones((batch, predictions), np.float32),
      next_sentence_labels=rng.integers(0, 2, (batch,)))
  with tf.GradientTape() as tape:
    outputs = model(features, training=True)
    loss, _ = objective.replica_loss(features, outputs, 12.0, batch)
  gradients = tape.gradient(loss, model.trainable_variables)
  assert all(g is not None for g in gradients)
  opt = optimization.create_optimizer(optimizer, 1e-3, 10)
  opt._create_all_weights(model.trainable_variables)
  slots = [opt.get_slot(v, name) for v in model.trainable_variables
           for name in opt.get_slot_names()]

  plan = memory_plan.plan(config, batch * 2, seq, predictions,
                          optimizer=optimizer, gradient_accumulation_steps=2)
  assert plan.parameters == sum(int(np.prod(v.shape))
                                for v in model.trainable_variables)
  assert plan.weights_bytes == _bytes(model.trainable_variables)
  assert plan.optimizer_bytes == _bytes(slots)
  assert plan.gradient_bytes == _bytes(gradients)
  assert plan.accumulator_bytes == plan.weights_bytes  # one per weight, K=2
  assert plan.micro_batch_size == batch
  # K=1: no accumulator; a micro-batch twice as large.
  whole = memory_plan.plan(config, batch * 2, seq, predictions,
                           optimizer=optimizer)
  assert whole.accumulator_bytes == 0
  assert whole.activation_bytes == 2 * plan.activation_bytes


def test_activations_by_hand_and_recomputation(tiny_config):
  """Every tensor counted by hand from its shape (not from the module's
  constants). tiny: H=32, E=16, I=64, N=4 heads, V=97, L=2 applications;
  b=2 sequences of s=8 tokens, P=3 predictions each."""
  hidden = 2 * 8 * 32 * 4    # one float32 [b, s, H]: 2,048 bytes
  inter = 2 * 8 * 64 * 4     # one float32 [b, s, I]: 4,096
  scores = 2 * 4 * 8 * 8 * 4  # one float32 [b, N, s, s]: 2,048
  # One application: the input, query, key, value, context and the
  # feed-forward's input (6), both LayerNorms' input and output (4); the
  # feed-forward's pre-activation, GELU's two intermediates and its output
  # (4 [b, s, I]); the softmax output (1 [b, N, s, s]).
  block = 10 * hidden + 4 * inter + 1 * scores
  assert block == 38_912
  # Embeddings: four float32 [b, s, E] (the sum, the LayerNorm's input
  # and output, the projection's input) and the projection's [b, s, H].
  embeddings = 4 * (2 * 8 * 16 * 4) + hidden  # 6,144
  # MLM head on b * P = 6 rows: the gathered [6, H], six [6, E] of the
  # transform (dense, GELU's, LayerNorm's), the float32 [6, V] logits and
  # their gradient.
  head = 6 * 32 * 4 + 6 * (6 * 16 * 4) + 2 * (6 * 97 * 4)  # 7,728
  plain = memory_plan.plan(tiny_config, 2, 8, 3)
  assert plain.activation_bytes == 2 * block + embeddings + head == 91_696
  # Recomputed: each application keeps its float32 input; one
  # application's activations exist at a time.
  recomputed = memory_plan.plan(tiny_config, 2, 8, 3, recompute_layers=True)
  assert recomputed.activation_bytes == (2 * hidden + block + embeddings
                                         + head) == 56_880
  # Dropout: per application the kept mask and the dropped probabilities
  # [b, N, s, s], and the masks of the two sublayers' [b, s, H] outputs.
  dropout = dataclasses.replace(tiny_config, hidden_dropout_prob=0.1,
                                attention_probs_dropout_prob=0.1)
  masks = 2 * scores + 2 * hidden  # 8,192 per application
  assert (memory_plan.plan(dropout, 2, 8, 3).activation_bytes
          == 91_696 + 2 * masks == 108_080)
  # mixed_bfloat16: 2-byte copies of the compute-dtype tensors; the
  # LayerNorms and the softmax stay float32, plus the softmax's bfloat16
  # copy.
  mixed_block = (6 * hidden // 2 + 4 * hidden + 4 * inter // 2
                 + scores + scores // 2)  # 25,600
  mixed_embeddings = 4 * (2 * 8 * 16 * 4) + hidden // 2  # 5,120
  mixed_head = 6 * 32 * 2 + 6 * (6 * 16 * 2) + 2 * (6 * 97 * 4)  # 6,192
  mixed = memory_plan.plan(tiny_config, 2, 8, 3, dtype="bfloat16")
  assert mixed.activation_bytes == (2 * mixed_block + mixed_embeddings
                                    + mixed_head) == 62_512
  # Each application keeps its bfloat16 copy of the block's weights:
  # attention 4 * (32 * 32 + 32) + 2 * 32 = 4,288, feed-forward
  # 32 * 64 + 64 + 64 * 32 + 32 + 2 * 32 = 4,256 parameters.
  assert mixed.cast_weight_bytes == 2 * 2 * (4_288 + 4_256) == 34_176


def test_smallest_fitting_steps_is_the_first_divisor_that_fits():
  from albert_tf.config import AlbertConfig
  config = AlbertConfig.from_json_file(BASE)
  args = dict(config=config, train_batch_size=4096, max_seq_length=512,
              dtype="bfloat16", num_replicas=8)
  device = memory_plan.parse_bytes("16GiB")
  steps = memory_plan.fitting_steps(device, **args)
  assert steps[True] < steps[False]
  for recompute, k in steps.items():
    fits = memory_plan.plan(recompute_layers=recompute,
                            gradient_accumulation_steps=k, **args)
    assert fits.peak_bytes <= 0.9 * device
    smaller = [d for d in range(1, k) if 512 % d == 0]
    if smaller:
      too_big = memory_plan.plan(recompute_layers=recompute,
                                 gradient_accumulation_steps=smaller[-1],
                                 **args)
      assert too_big.peak_bytes > 0.9 * device


@pytest.mark.parametrize("text,size", [("16GiB", 16 * 2**30),
                                       ("80GB", 80 * 10**9),
                                       ("512 MiB", 512 * 2**20),
                                       ("1.5e9", 1_500_000_000)])
def test_parse_bytes(text, size):
  assert memory_plan.parse_bytes(text) == size


@pytest.mark.parametrize("text", ["16XB", "GiB", "-1GB", "0GB", ""])
def test_parse_bytes_rejects(text):
  with pytest.raises(UserInputError, match="--device_memory"):
    memory_plan.parse_bytes(text)


def _summary(*flags):
  return subprocess.run(
      [sys.executable, "-m", "tools.model_summary",
       f"--albert_config_file={BASE}", *flags],
      cwd=ROOT, capture_output=True, text=True, check=False,
      env=dict(os.environ, PYTHONPATH=ROOT))


def test_cli_json_plan():
  result = _summary("--format=json", "--train_batch_size=64",
                    "--max_seq_length=128", "--gradient_accumulation_steps=4",
                    "--num_replicas=2", "--dtype=bfloat16",
                    "--recompute_layers", "--device_memory=16GiB")
  assert result.returncode == 0, result.stderr
  figures = json.loads(result.stdout)
  from albert_tf.config import AlbertConfig
  expected = memory_plan.plan(AlbertConfig.from_json_file(BASE), 64, 128, 20,
                              "bfloat16", "lamb", True, 4, 2)
  for key in ("weights_bytes", "optimizer_bytes", "gradient_bytes",
              "activation_bytes", "peak_bytes"):
    assert figures[key] == getattr(expected, key)
  assert figures["micro_batch_size"] == 8
  assert figures["smallest_steps_with_recompute"] == 1


@pytest.mark.parametrize("flag,message", [
    ("--device_memory=16XB", "error: --device_memory must be a size such as "
     "16GiB, 80GB or 512MiB, got '16XB'"),
    ("--gradient_accumulation_steps=0",
     "error: --gradient_accumulation_steps must be at least 1, got 0"),
    ("--gradient_accumulation_steps=3", "error: "
     "--gradient_accumulation_steps=3 does not divide "
     "--train_batch_size=4096 (micro-batches are equal slices of the "
     "update's batch)"),
    ("--num_replicas=3", "error: --train_batch_size=4096 does not split over "
     "3 replicas"),
])
def test_cli_bad_plan_flags_are_one_line(flag, message):
  result = _summary(flag)
  assert result.returncode == 1
  lines = [line for line in result.stderr.strip().splitlines()
           if "cuInit" not in line]
  assert lines == [message]


def test_shared_gradients_count_each_application_beyond_the_first(
    tiny_config):
  # tiny: 2 layers sharing one block: one extra float32 gradient of it,
  # attention 4 * (32 * 32 + 32) + 2 * 32 = 4,288 and feed-forward
  # 32 * 64 + 64 + 64 * 32 + 32 + 2 * 32 = 4,256 parameters.
  plan = memory_plan.plan(tiny_config, 2, 8)
  assert plan.shared_gradient_bytes == 4 * (4_288 + 4_256)
  unshared = dataclasses.replace(tiny_config, share_parameters="none")
  assert memory_plan.plan(unshared, 2, 8).shared_gradient_bytes == 0
  ffn_only = dataclasses.replace(tiny_config, share_parameters="ffn")
  h, i = 32, 64
  assert memory_plan.plan(ffn_only, 2, 8).shared_gradient_bytes == 4 * (
      h * i + i + i * h + h + 2 * h)


def test_the_recipe_page_table_is_generated_by_the_plan():
  """docs/recipe-on-your-hardware.md's table (regenerate: the command in
  albert_tf/recipe_on_hardware.py)."""
  from albert_tf import recipe_on_hardware
  with open(os.path.join(ROOT, "docs", "recipe-on-your-hardware.md")) as f:
    page = f.read()
  begin, end = "<!-- recipe table: begin -->\n", "<!-- recipe table: end -->"
  section = page[page.index(begin) + len(begin):page.index(end)]
  assert section == recipe_on_hardware.markdown_table(
      os.path.join(ROOT, "configs")) + "\n"


def test_run_pretraining_rejects_an_unparseable_device_memory(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "tools.run_pretraining",
       f"--input_file={tmp_path}/none.tfrecord", f"--albert_config_file={BASE}",
       f"--output_dir={tmp_path}/run", "--device_memory=lots"],
      cwd=ROOT, capture_output=True, text=True, check=False,
      env=dict(os.environ, PYTHONPATH=ROOT))
  assert result.returncode == 1
  lines = [line for line in result.stderr.strip().splitlines()
           if "cuInit" not in line]
  assert lines == ["error: --device_memory must be a size such as 16GiB, "
                   "80GB or 512MiB, got 'lots'"]


def test_run_pretraining_logs_the_plan_and_warns_when_it_does_not_fit(
    caplog):
  from albert_tf.config import AlbertConfig
  from albert_tf.training.pretraining import driver
  from albert_tf.training.pretraining.params import PretrainingParams
  from albert_tf.training.runtime_params import RuntimeParams
  config = AlbertConfig.from_json_file(BASE)
  params = PretrainingParams(
      runtime=RuntimeParams(output_dir="ram://run"),
      input_file="x", albert_config_file=BASE, train_batch_size=64,
      max_seq_length=512, device_memory="16GiB")
  with caplog.at_level("INFO", logger="absl"):
    driver._log_memory_plan(params, config, num_replicas=2)
  messages = [r.getMessage() for r in caplog.records]
  plan = memory_plan.plan(config, 64, 512, num_replicas=2)
  assert memory_plan.format_line(plan) in messages
  assert plan.peak_bytes > 0.9 * 16 * 2**30  # 32 sequences of 512
  (warning,) = [m for m in messages if "will not fit" in m]
  steps = memory_plan.fitting_steps(16 * 2**30, config=config,
                                    train_batch_size=64, max_seq_length=512,
                                    num_replicas=2)
  assert (f"fits: K={steps[False]} without --recompute_layers, "
          f"K={steps[True]} with") in warning
  caplog.clear()
  with caplog.at_level("INFO", logger="absl"):
    driver._log_memory_plan(dataclasses.replace(params,
                                                device_memory="80GiB"),
                            config, num_replicas=2)
  assert not [r for r in caplog.records if "will not fit" in r.getMessage()]
