"""Every contender of `benchmarks.finetuning.distillation` scored the same
way: at each checkpoint its run kept (one look at dev each), on dev and on
the held-out test split; benchmarks.accuracy.select picks the look on dev
and reports its test figures beside the last look's.

A run keeps every checkpoint it saves (--keep_checkpoint_max = LOOKS,
--save_checkpoints_steps = steps / LOOKS), so a run from a pretrained
checkpoint, a student of the teacher and a static cut of the teacher's
checkpoints all get LOOKS looks. An early-exit run's patience is the one
whose mean depth on dev is nearest the cut's (a rule on depth, not on
accuracy).
"""

import csv
import dataclasses
import io
import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from benchmarks import accuracy
from benchmarks.finetuning import distillation_report as report

LOOKS = 3


def split_inputs(run_dir: str, path: str, spm: str, seq_length: int
                 ) -> Tuple[Dict, np.ndarray]:
  """A split's token ids at seq_length and label indices, in the run's
  label order (packed as fine-tuning packs them). path: a CSV or JSON
  lines file (.jsonl) with columns text and label."""
  import json

  from albert_common import file_io
  from albert_tf.exports.text_runner import TextRunner
  from data_pipeline.tasks import label_list
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  labels = list(label_list.read(run_dir).labels)
  text = file_io.read_text(path)
  rows = ([json.loads(line) for line in text.splitlines() if line.strip()]
          if path.endswith(".jsonl") else
          list(csv.DictReader(io.StringIO(text))))
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm)
  packer.seq_length, packer.labels = seq_length, labels
  return (packer.classify_inputs([row["text"] for row in rows]),
          np.array([labels.index(row["label"]) for row in rows]))


def metrics(logits: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
  from sklearn.metrics import f1_score
  predicted = logits.argmax(-1)
  return dict(accuracy=float(np.mean(predicted == labels)),
              macro_f1=float(f1_score(labels, predicted, average="macro")))


def logits_of(model, inputs, key="logits") -> np.ndarray:
  n = len(inputs["input_word_ids"])
  return np.concatenate([model({k: v[i:i + 64] for k, v in inputs.items()},
                               training=False)[key].numpy()
                         for i in range(0, n, 64)])


def checkpoints(run_dir: str) -> List[Tuple[int, str]]:
  """(step, prefix) of every ckpt-<step> the run kept, in step order."""
  steps = sorted(int(name[5:-6]) for name in os.listdir(run_dir)
                 if name.startswith("ckpt-") and name.endswith(".index"))
  return [(step, os.path.join(run_dir, f"ckpt-{step}")) for step in steps]


def _looks_or_refuse(run_dir: str, looks: int = LOOKS
                     ) -> List[Tuple[int, str]]:
  found = checkpoints(run_dir)
  if len(found) != looks:
    raise accuracy.LooksError(
        f"{run_dir}: {len(found)} checkpoints kept, not {looks}: each "
        "contender gets the same number of looks at dev")
  return found


def classifier_looks(run_dir: str, splits: Dict, depth: Optional[int] = None,
                     looks: int = LOOKS) -> List[Dict]:
  """One look per kept checkpoint of a run_classifier or tools.distill run
  (depth: its first `depth` applications, the static cut; looks: how many
  checkpoints it must have kept)."""
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.distillation import teacher as teacher_lib
  run = teacher_lib.read_teacher(run_dir)
  scored = []
  for step, prefix in _looks_or_refuse(run_dir, looks):
    config = run.config if depth is None else AlbertConfig.from_dict(
        dict(run.config.to_dict(), num_hidden_layers=depth))
    model = AlbertClassifier(AlbertEncoder(config, name="encoder"),
                             run.label_list.num_labels)
    teacher_lib.restore_weights(
        model, dataclasses.replace(run, checkpoint=prefix), is_teacher=False)
    scored.append(_look(step, model, splits))
  return scored


def _look(at, model, splits, key="logits", pick=None) -> Dict:
  scored = {}
  for name, (inputs, labels) in splits.items():
    logits = logits_of(model, inputs, key)
    scored[name] = metrics(pick(logits) if pick else logits, labels)
  return dict(at=at, dev=scored["dev"]["accuracy"], test=scored["test"])


def pabee_looks(run_dir: str, splits: Dict, cut: int
                ) -> Tuple[List[Dict], List[Dict]]:
  """An early-exit run's looks: (its head after `cut` applications, its
  early exit at the patience whose mean depth on dev is nearest `cut`);
  an exit look's test figures carry "depth" (mean exit layer on test) and
  "patience"."""

  from albert_tf.training import early_exit
  from benchmarks.finetuning import distillation_report as report
  cuts, exits = [], []
  for step, prefix in _looks_or_refuse(run_dir):
    model = pabee_model(run_dir, prefix)
    all_logits = {name: logits_of(model, inputs, "all_logits")
                  for name, (inputs, _) in splits.items()}
    scored = {name: metrics(all_logits[name][:, cut - 1], labels)
              for name, (_, labels) in splits.items()}
    cuts.append(dict(at=step, dev=scored["dev"]["accuracy"],
                     test=dict(scored["test"], depth=cut)))
    dev_labels = splits["dev"][1]
    table = early_exit.exit_table(
        all_logits["dev"], lambda x: metrics(x, dev_labels), "accuracy")
    patience = report.patience_for_depth(table, cut)
    at = {}
    for name, (_, labels) in splits.items():
      logits, layers = early_exit.exit_at(
          all_logits[name], patience, early_exit.DEFAULT_THRESHOLD, False)
      at[name] = dict(metrics(logits, labels), depth=float(layers.mean()),
                      patience=patience)
    exits.append(dict(at=step, dev=at["dev"]["accuracy"], test=at["test"]))
  return cuts, exits


def pabee_model(run_dir: str, prefix: str):
  """The early-exit classifier of a run_classifier --early_exit run at
  checkpoint `prefix`."""
  import tensorflow as tf

  from albert_tf.config import AlbertConfig
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks import label_list
  config = AlbertConfig.from_json_file(
      os.path.join(run_dir, "albert_config.json"))
  labels = label_list.read(run_dir).labels
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), len(labels),
                                    dropout_rate=0.0)
  tf.train.Checkpoint(model=model).restore(prefix).expect_partial(
      ).assert_existing_objects_matched()
  return model


def teacher_confidence(teacher_dir: str, inputs: Dict, labels: np.ndarray,
                       temperature: float) -> Dict:
  """report.soft_target_confidence of the teacher in `teacher_dir` on its
  training records (token ids `inputs`, label indices `labels`) at the
  distilled runs' `temperature`."""
  from albert_tf.training.distillation import teacher as teacher_lib
  model = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(teacher_dir))
  return report.soft_target_confidence(logits_of(model, inputs), labels,
                                       temperature)
