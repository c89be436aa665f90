"""One shared layer (issue 49): the code before and after, in one process.

  python -m benchmarks.investigations.layer_redesign \
      --before_dir=/path/to/worktree/at/the/merge/base --size=base --write

The redesign wrote the block's arithmetic once (layers/shared_block.py) and
the loop over its applications once (networks/layer_loop.py); the outputs
are the same (tests/albert_tf/models/test_shared_layer_fixtures.py), this
measures the speed. The OLD albert_tf is imported from `--before_dir`
under its own module objects (sys.modules swapped while it loads, then
restored; its Keras registrations are undone), the NEW from this tree;
both models get the same weights, and each workload calls before, after,
before, after, ... (common.time_alternating), so the load of the machine
falls on both alike. Workloads, float32:

  pretraining step  AlbertPretrainer forward + backward (no optimizer
                    update: it does not change), batch x seq, 20 masked
                    positions a row;
  serving           the encoder not training, batch 1 at 20 and at seq
                    tokens, and batch 32 at seq;
  early exit        the classifier's early-exit loop at patience 4,
                    batch 32 at seq (random weights: where rows exit
                    is the same in both trees).

Per workload: the median call time of each tree and after / before (> 1:
after is slower). `--write` writes the section "One shared layer: before
and after" into BENCHMARKS.md (no first-table row). Run it on a quiet
machine: the figures are the lead's, not a test's.
"""

import argparse
import importlib
import statistics
import sys
from typing import Dict

import numpy as np
import tensorflow as tf

from benchmarks import common

SECTION = "One shared layer: before and after"
_PACKAGES = ("albert_tf", "albert_common", "data_pipeline")


def _ours(name: str) -> bool:
  return name.split(".")[0] in _PACKAGES


def import_before(before_dir: str):
  """The old tree's albert_tf (and its early-exit classifier module), as
  module objects that do not replace this tree's."""
  from tf_keras.src.saving import object_registration as registry

  import albert_tf  # noqa: F401  (this tree's, loaded first)
  saved = {k: v for k, v in sys.modules.items() if _ours(k)}
  objects = dict(registry._GLOBAL_CUSTOM_OBJECTS)  # pylint: disable=protected-access
  names = dict(registry._GLOBAL_CUSTOM_NAMES)  # pylint: disable=protected-access
  for name in saved:
    del sys.modules[name]
  sys.path.insert(0, before_dir)
  try:
    old = importlib.import_module("albert_tf")
    old_classifier = importlib.import_module(
        "albert_tf.models.albert_early_exit_classifier")
    old_pretrainer = importlib.import_module("albert_tf.models")
    # albert_tf's public names load lazily: resolve them while the old
    # modules are the ones in sys.modules.
    for name in ("AlbertConfig", "AlbertEncoder"):
      setattr(old, name, getattr(old, name))
    old_pretrainer.AlbertPretrainer = old_pretrainer.AlbertPretrainer
  finally:
    sys.path.remove(before_dir)
    for name in [k for k in sys.modules if _ours(k)]:
      del sys.modules[name]
    sys.modules.update(saved)
    registry._GLOBAL_CUSTOM_OBJECTS.clear()  # pylint: disable=protected-access
    registry._GLOBAL_CUSTOM_OBJECTS.update(objects)  # pylint: disable=protected-access
    registry._GLOBAL_CUSTOM_NAMES.clear()  # pylint: disable=protected-access
    registry._GLOBAL_CUSTOM_NAMES.update(names)  # pylint: disable=protected-access
  if not old.__file__.startswith(before_dir):
    raise SystemExit(f"--before_dir={before_dir}: its albert_tf did not "
                     f"load (got {old.__file__})")
  return old, old_classifier, old_pretrainer


def _inputs(batch: int, seq: int, vocab: int, rng) -> Dict[str, tf.Tensor]:
  lengths = rng.randint(seq // 2, seq + 1, size=batch)
  mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
  return dict(
      input_word_ids=tf.constant(rng.randint(5, vocab, (batch, seq)) * mask,
                                 tf.int32),
      input_mask=tf.constant(mask),
      input_type_ids=tf.zeros([batch, seq], tf.int32))


def _models(package, classifier_module, models_module, config_dict):
  """(pretrainer, encoder, early-exit classifier) of one tree."""
  config = package.AlbertConfig.from_dict(config_dict)
  encoder = package.AlbertEncoder(config)
  pretrainer = models_module.AlbertPretrainer(encoder)
  classifier = classifier_module.AlbertEarlyExitClassifier(
      encoder, num_classes=3)
  return pretrainer, encoder, classifier


def _copy(source, target) -> None:
  """source's weights into target (same architecture, same order)."""
  pairs = list(zip(source.weights, target.weights))
  if [a.name for a, _ in pairs] != [b.name for _, b in pairs]:
    raise SystemExit("the two trees' models name their weights differently")
  for a, b in pairs:
    b.assign(a)


def workloads(trees, vocab: int, batch: int, seq: int, patience: int,
              rng) -> Dict[str, Dict[str, object]]:
  """Per workload, per tree ("before", "after"), a compiled call."""
  shapes = sorted({(1, min(20, seq)), (1, seq), (32, seq)})
  serving = {f"batch {b} x {s}": _inputs(b, s, vocab, rng)
             for b, s in shapes}
  step_inputs = dict(_inputs(batch, seq, vocab, rng), masked_lm_positions=(
      tf.constant(rng.randint(1, seq, (batch, min(20, seq - 1))),
                  tf.int32)))
  labels = tf.constant(rng.randint(0, vocab, step_inputs[
      "masked_lm_positions"].shape), tf.int32)
  exit_inputs = _inputs(32, seq, vocab, rng)
  out = {}
  for tree, (pretrainer, encoder, classifier) in trees.items():
    def step(pretrainer=pretrainer):
      with tf.GradientTape() as tape:
        logits = pretrainer(step_inputs, training=True)["mlm_logits"]
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
      return tape.gradient(loss, pretrainer.trainable_variables)
    out.setdefault(f"pretraining step {batch} x {seq}", {})[tree] = (
        tf.function(step))
    for name, data in serving.items():
      out.setdefault(f"serving {name}", {})[tree] = tf.function(
          lambda data=data, encoder=encoder: encoder(data, training=False))
    out.setdefault(f"early exit, patience {patience}, 32 x {seq}", {})[
        tree] = tf.function(lambda c=classifier: c.early_exit(
            exit_inputs, patience)["logits"])
  return out


def _revision(tree: str) -> str:
  """The tree's commit, and "with local changes" when it has some."""
  import subprocess
  def git(*args):
    return subprocess.run(["git", "-C", tree, *args], capture_output=True,
                          text=True, check=False).stdout.strip()
  commit = git("rev-parse", "--short", "HEAD") or "an unknown commit"
  changed = git("status", "--porcelain", "--untracked-files=no")
  return f"commit {commit}" + (", with local changes" if changed else "")


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--before_dir", required=True,
                      help="a checkout of the code before the redesign")
  parser.add_argument("--size", default="base",
                      help="a released size or a config JSON path")
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--patience", type=int, default=4)
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--write", action="store_true")
  args = parser.parse_args(argv)
  import albert_tf
  from albert_tf.models import albert_early_exit_classifier
  old = import_before(args.before_dir)
  config_dict = common.load_config(args.size).to_dict()
  tf.random.set_seed(0)
  after = _models(albert_tf, albert_early_exit_classifier,
                  importlib.import_module("albert_tf.models"), config_dict)
  before = _models(*old, config_dict)
  rng = np.random.RandomState(0)
  warm = _inputs(1, 4, config_dict["vocab_size"], rng)
  for models in (after, before):
    models[0](dict(warm, masked_lm_positions=tf.constant([[1]])))
    models[2](warm)
  for source, target in zip(after, before):
    _copy(source, target)
  check = _inputs(4, args.seq_length, config_dict["vocab_size"], rng)
  difference = np.max(np.abs(
      before[1](check, training=False)["sequence_output"]
      - after[1](check, training=False)["sequence_output"]))
  if difference > 1e-4:
    raise SystemExit(f"the trees' encoders differ by {difference} on the "
                     "same weights: not the same computation")
  calls = workloads(dict(before=before, after=after),
                    config_dict["vocab_size"], args.batch_size,
                    args.seq_length, args.patience, rng)
  rows = []
  for name, fns in calls.items():
    times = common.time_alternating(fns, args.repeats)
    b, a = (statistics.median(times[k]) for k in ("before", "after"))
    rows.append([name, f"{b * 1e3:.2f}", f"{a * 1e3:.2f}", f"{a / b:.3f}"])
    print(f"{name}: before {b * 1e3:.2f} ms, after {a * 1e3:.2f} ms, "
          f"after / before {a / b:.3f}", flush=True)
  table = common.markdown_table(
      ["workload (float32)", "before ms", "after ms", "after / before"],
      rows)
  if args.write:
    command = " ".join(["python -m benchmarks.investigations.layer_redesign",
                        *(argv if argv is not None else sys.argv[1:])])
    common.update_benchmarks_md(SECTION, "\n\n".join([
        f"ALBERT-{common.size_label(args.size)}, medians of "
        f"{args.repeats} alternating calls per tree, in one process. "
        "Before: one definition per way to run the layer (the tree at "
        f"{_revision(args.before_dir)}); after: one block "
        "(layers/shared_block.py) and one loop (networks/layer_loop.py), "
        f"at {_revision('.')}.", table, common.machine_line(),
        f"`{command}`"]))
  return rows


if __name__ == "__main__":
  main()
