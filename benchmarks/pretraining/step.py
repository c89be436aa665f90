"""Pretraining step speed: ours vs Model Garden, same config, same process.

  python -m benchmarks.pretraining.step --sizes=base,large \
      --batch_size=8 --seq_length=128 --repeats=8

One step = forward, MLM + SOP loss, backward, clipping, LAMB update. Model
Garden: `networks.AlbertEncoder` + `models.BertPretrainerV2` (MLM head tied
to the embeddings, its ALBERT SOP head: dense H->H tanh on [CLS], then 2
classes). Ours: the real training path,
`PretrainingRunner.train_step` (all-reduce, clipping, metrics included).
Steps alternate between the contenders; medians are reported with the ratio
Model Garden time / our time (> 1: ours is faster), the achieved FLOP/s as
a share of the matmul peak at the step's own shapes measured in the same
run (benchmarks.roofline.step_peak: [batch x seq, H] x [H, I]; bfloat16
modes against the bfloat16 peak where the CPU has one), and each
contender's peak memory (measured in a child process of its own). With
--write: its BENCHMARKS.md section, the figures of the first table and
benchmarks/charts/pretraining_step.png (sequences/s, the peak marked).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import optimization
from albert_tf import parameters_and_flops
from albert_tf.config import AlbertConfig
from benchmarks import ceilings
from benchmarks import charts
from benchmarks import common
from benchmarks import roofline

PREDICTIONS = 20
# `python -m benchmarks.summary --run`'s short mode: the first table's row
# only (ALBERT-base, float32, no memory children); about 3 minutes on 2
# cores (two models built, the peak, 2 warm-up and 4 timed steps each);
# 4 min 03 s measured at load average 9 on a 2-core AMD EPYC.
SHORT_ARGS = ["--sizes=base", "--modes=float32", "--batch_size=8",
              "--seq_length=128", "--repeats=4", "--no_memory", "--write"]


def synthetic_batch(config: AlbertConfig, batch: int, seq: int, seed=0,
                    predictions: int = PREDICTIONS):
  rng = np.random.default_rng(seed)
  return dict(
      input_word_ids=tf.constant(rng.integers(5, config.vocab_size,
                                              (batch, seq)), tf.int32),
      input_mask=tf.ones([batch, seq], tf.int32),
      input_type_ids=tf.constant(np.repeat([[0] * (seq // 2) +
                                            [1] * (seq - seq // 2)], batch,
                                           0), tf.int32),
      masked_lm_positions=tf.constant(
          np.sort(rng.choice(np.arange(1, seq), (batch, predictions)), -1),
          tf.int32),
      masked_lm_ids=tf.constant(rng.integers(5, config.vocab_size,
                                             (batch, predictions)), tf.int32),
      masked_lm_weights=tf.ones([batch, predictions], tf.float32),
      next_sentence_labels=tf.constant(rng.integers(0, 2, (batch,)),
                                       tf.int32))


def _optimizer():
  return optimization.create_optimizer("lamb", 1e-4, num_train_steps=10**6,
                                       num_warmup_steps=0)


MODES = {  # name: (jit_compile, Keras dtype policy)
    "float32": (False, "float32"),
    "float32 XLA": (True, "float32"),
    "bfloat16": (False, "mixed_bfloat16"),
}


def ours_step(config: AlbertConfig, batch, jit_compile: bool,
              policy: str = "float32"):
  """Our training path: PretrainingRunner.train_step on the default strategy."""
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.pretraining.runner import PretrainingRunner
  strategy = tf.distribute.get_strategy()
  model = AlbertPretrainer(AlbertEncoder(config, dtype=policy))
  dataset = tf.data.Dataset.from_tensors(batch).repeat()
  runner = PretrainingRunner(strategy, model, _optimizer(), dataset,
                             global_batch_size=int(batch["input_mask"].shape[0]),
                             jit_compile=jit_compile)
  iterator = iter(dataset)
  step = tf.function(lambda: runner.train_step(iterator))
  return lambda: (step(), runner.optimizer.iterations)[1]


def garden_step(config: AlbertConfig, batch, jit_compile: bool,
                policy: str = "float32"):
  """Model Garden's AlbertEncoder + BertPretrainerV2, a plain LAMB step.

  Model Garden's layers follow the global dtype policy, so it is set while
  the model is built and reset afterwards.
  """
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    return _garden_step(config, batch, jit_compile)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def _garden_step(config: AlbertConfig, batch, jit_compile: bool):
  from official.nlp.modeling import layers
  from official.nlp.modeling import models

  from albert_tf.checkpoints.converter import build_garden_encoder
  init = tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range)
  encoder = build_garden_encoder(config, dropout_rate=0.0,
                                 attention_dropout_rate=0.0, initializer=init)
  model = models.BertPretrainerV2(
      encoder, mlm_activation="gelu", mlm_initializer=init,
      classification_heads=[layers.ClassificationHead(
          inner_dim=config.hidden_size, num_classes=2, initializer=init,
          name="sop")])
  optimizer = _optimizer()
  inputs = {k: batch[k] for k in ("input_word_ids", "input_mask",
                                  "input_type_ids", "masked_lm_positions")}

  @tf.function(jit_compile=jit_compile)
  def forward_backward():
    with tf.GradientTape() as tape:
      outputs = model(inputs, training=True)
      weights = batch["masked_lm_weights"]
      mlm = tf_keras.losses.sparse_categorical_crossentropy(
          batch["masked_lm_ids"], tf.cast(outputs["mlm_logits"], tf.float32),
          from_logits=True)
      sop = tf_keras.losses.sparse_categorical_crossentropy(
          batch["next_sentence_labels"], tf.cast(outputs["sop"], tf.float32),
          from_logits=True)
      loss = (tf.reduce_sum(mlm * weights) / tf.reduce_sum(weights)
              + tf.reduce_mean(sop))
    return tape.gradient(loss, model.trainable_variables)

  @tf.function
  def step():
    grads, _ = tf.clip_by_global_norm(forward_backward(), 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return optimizer.iterations

  return step


def training_flops(config: AlbertConfig, batch: int, seq: int) -> float:
  """Model FLOPs of a step (every block at every position): the "% of
  peak" columns credit both contenders with these."""
  flops = parameters_and_flops.flops_per_token(config, seq)
  return (batch * seq * flops["encoder_training"]
          + batch * PREDICTIONS * flops["mlm_head_training"])


def ours_training_flops(config: AlbertConfig, batch: int, seq: int
                        ) -> float:
  """The FLOPs of ours' step (benchmarks.ceilings: its last block at
  [CLS] and the masked positions only): what its ceiling is made of."""
  from benchmarks import ceilings
  head = parameters_and_flops.flops_per_token(config, seq)[
      "mlm_head_training"]
  return batch * (ceilings.encoder_flops(config, seq, 1 + PREDICTIONS,
                                         training=True)
                  + PREDICTIONS * head)


def measure_memory(size: str, which: str, batch: int, seq: int, mode: str):
  """Peak RSS (MB) of a child process running 3 steps of one contender
  (TensorFlow's own footprint included: the same for both)."""
  code = (f"import json; from benchmarks.pretraining import step as b; "
          f"print(json.dumps(b._memory_child({size!r}, {which!r}, {batch}, "
          f"{seq}, {mode!r})))")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=env, check=True,
                          cwd=common.REPO_ROOT)
  return json.loads(result.stdout.strip().splitlines()[-1])


def _memory_child(size, which, batch, seq, mode):
  config = common.load_config(size)
  make = ours_step if which == "ours" else garden_step
  step = make(config, synthetic_batch(config, batch, seq), *MODES[mode])
  for _ in range(3):
    common.wait_for(step())
  return common.peak_rss_mb()


def _peaks(config, rows: int, modes) -> dict:
  """{mode: FLOP/s}: the matmul peak at the step's shapes in the mode's
  compute dtype (bfloat16 only where the CPU has it; else float32's)."""
  peaks = {"float32": roofline.step_peak(config.hidden_size,
                                         config.intermediate_size, rows)}
  if any("bfloat16" in m for m in modes) and roofline.bfloat16_supported():
    peaks["bfloat16"] = roofline.step_peak(
        config.hidden_size, config.intermediate_size, rows, "bfloat16")
  print("matmul peak at the step's shapes: " + ", ".join(
      f"{d} {p / 1e9:.1f} GFLOP/s" for d, p in peaks.items()), flush=True)
  return {m: peaks.get("bfloat16" if "bfloat16" in m else "float32",
                       peaks["float32"]) for m in modes}


def run(sizes, batch, seq, repeats, modes, memory=True):
  """(markdown table, {size label: {mode: peak FLOP/s}}, one dict per row:
  label, size, mode, ours and garden (sequences/s; 0: Garden failed),
  ceiling (sequences/s at the peak), peak (FLOP/s), reached (share))."""
  rows, plot, all_peaks = [], [], {}
  for size in sizes:
    config = common.load_config(size)
    peaks = _peaks(config, batch * seq, modes)
    all_peaks[common.size_label(size)] = peaks
    batch_tensors = synthetic_batch(config, batch, seq)
    flops = training_flops(config, batch, seq)
    contenders, failures = {}, {}
    for mode in modes:
      contenders[f"ours {mode}"] = ours_step(config, batch_tensors,
                                             *MODES[mode])
      try:
        step = garden_step(config, batch_tensors, *MODES[mode])
        common.wait_for(step())
        contenders[f"garden {mode}"] = step
      except (ValueError, TypeError, tf.errors.OpError) as e:
        lines = [line.strip() for line in str(e).splitlines()
                 if "Error" in line or "Incompatible" in line]
        failures[mode] = (lines or [type(e).__name__])[-1][:160]
        print(f"Model Garden fails in mode {mode}: {failures[mode]}")
    times = common.time_alternating(contenders, repeats)
    for mode in modes:
      ours_s = common.median(times[f"ours {mode}"])
      garden_s = (common.median(times[f"garden {mode}"])
                  if mode not in failures else float("nan"))
      mem = {w: measure_memory(size, w, batch, seq, mode) if memory and (
          w == "ours" or mode not in failures) else float("nan")
             for w in ("ours", "garden")}
      failed = mode in failures
      garden_cells = ([f"{garden_s:.2f}", f"{garden_s / ours_s:.2f}x"]
                      if not failed else
                      ["fails (`MaskedLM` under this policy)", "-"])
      label = common.size_label(size)
      rows.append([label, mode, f"{ours_s:.2f}"] + garden_cells + [
          f"{batch / ours_s:.1f}",
          "-" if failed else f"{batch / garden_s:.1f}",
          f"{peaks[mode] / 1e9:.1f}",
          roofline.percent(flops / ours_s, peaks[mode]),
          "-" if failed else roofline.percent(flops / garden_s, peaks[mode]),
          _megabytes(mem["ours"]), _megabytes(mem["garden"])])
      plot.append(dict(
          label=f"{label}\n{mode}", size=label, mode=mode,
          ours=batch / ours_s, ceiling=ceilings.rate_at_peak(
              peaks[mode], ours_training_flops(config, batch, seq)) * batch,
          garden=0.0 if failed else batch / garden_s,
          peak=peaks[mode], reached=flops / ours_s / peaks[mode]))
      print(rows[-1], flush=True)
  header = ["model", "mode", "ours s/step", "Garden s/step",
            "speed-up (Garden/ours)", "ours seq/s", "Garden seq/s",
            "matmul peak GFLOP/s", "ours % of peak", "Garden % of peak",
            "ours peak MB", "Garden peak MB"]
  table = common.markdown_table(header, rows)
  print(table)
  return table, all_peaks, plot


def _megabytes(value: float) -> str:
  return "-" if np.isnan(value) else f"{value:.0f}"


def save_plot(plot, path):
  """The chart: sequences/s of both contenders per model and mode, the
  matmul peak's sequences/s marked."""
  return charts.bars(path, "ALBERT pretraining step (higher is better)",
                     "sequences / s",
                     [(p["label"], {"ours": p["ours"],
                                    "Model Garden": p["garden"]})
                      for p in plot], [p["ceiling"] for p in plot])


NOTES = """\
Both contenders are credited with the same model FLOPs (every layer over the
whole sequence) in the "% of peak" columns (model FLOPs utilisation), so
they compare like with like even though ours skips work (the last block
outside [CLS] and the masked positions). The first table's ceiling is
ours' own work at the peak (benchmarks.ceilings: the skipped work is not
credited), so its share is of what ours could reach. The peak is the
matmul's at the step's shapes, measured in the same process
(benchmarks.roofline). Peak memory is the resident set (VmHWM) of a fresh
process running three steps of one contender, TensorFlow's own footprint
included. Model Garden's `MaskedLM` cannot run under `mixed_bfloat16` (it
casts the tied bfloat16 embedding table to float32), so that mode has no
Model Garden column."""


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", default="base,large")
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=8)
  parser.add_argument("--modes", default=",".join(MODES),
                      help=f"comma-separated, from {list(MODES)}")
  parser.add_argument("--no_memory", action="store_true")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = common.parse_args(parser)
  # The load over the whole run (the memory children's CPU is ours).
  window = common.CpuWindow(children=True)
  window.start()
  table, _, plot = run(args.sizes.split(","), args.batch_size,
                       args.seq_length, args.repeats,
                       args.modes.split(","), memory=not args.no_memory)
  others = window.others()
  print(common.load_conditions(others))
  if args.write:
    _write(args, table, plot, others)


def _write(args, table, plot, others: float = 0.0):
  """Section, first-table figures (the first float32 row) and chart
  (others: the cores other processes used over the run)."""
  save_plot(plot, os.path.join(charts.CHARTS_DIR, "pretraining_step.png"))
  command = common.command_line("benchmarks.pretraining.step",
                                sys.argv[1:])
  common.update_benchmarks_md(
      "Pretraining step", f"`{command}`; {common.machine_line()}; "
      f"{common.load_conditions(others)}.\n\n" +
      table + "\n\n" + NOTES +
      "\n\n![pretraining step](benchmarks/charts/pretraining_step.png)",
      figures=figures(plot, args.batch_size, args.seq_length,
                      common.machine_label(), command, others),
      stage="Pretraining")


def figures(plot, batch: int, seq: int, machine: str, command: str,
            others: float = 0.0):
  """The first table's row: the first float32 row of `plot` (run's
  answer), ours against Model Garden in sequences/s, the ceiling the
  sequences/s ours' own work (benchmarks.ceilings) allows at the matmul
  peak at that step's own shapes ([batch x seq, H] x [H, I]), measured in
  the same run. None if Garden failed."""
  row = next((p for p in plot if p["mode"] == "float32"), plot[0])
  if not row["garden"]:
    return []
  return [dict(
      job=f"Pretraining step (ALBERT-{row['size']}, {row['mode']}, "
      f"{batch} x {seq})", order=20,
      ours=dict(label="ours", value=round(row["ours"], 2),
                unit="sequences/s"),
      peer=dict(label="Model Garden", value=round(row["garden"], 2),
                unit="sequences/s"),
      contender="peer", higher_is_better=True,
      ceiling=dict(label=f"ours' FLOPs at the matmul peak at [{batch * seq}"
                   f", H] x [H, I]: {row['peak'] / 1e9:.0f} GFLOP/s, same "
                   "run",
                   value=round(row["ceiling"], 2), unit="sequences/s"),
      reached=round(row["ours"], 2), machine=machine, date=common.today(),
      command=command, conditions="alternating in one process; "
      + common.load_conditions(others))]


if __name__ == "__main__":
  main()
