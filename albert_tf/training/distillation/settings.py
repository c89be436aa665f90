"""DistillationOptions: the flags of tools.distill beside fine-tuning's."""

import dataclasses

from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting

INTERMEDIATE_LOSSES = ("none", "attention_relation", "hidden_projection",
                       "tinybert")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DistillationOptions(FlatConstructible):
  """What is distilled into what (each leaf field is the flag of its name)."""

  teacher: str = setting(
      help="The teacher: a run_classifier --output_dir (its best "
      "checkpoint) or --export_dir on your own files (classification, "
      "regression or multi_label).")
  student_layers: int = setting(
      0, "A student of the teacher's own weights stopped after this many "
      "applications of the shared layer (1..num_hidden_layers). 0: give "
      "--student_config.")
  student_config: str = setting(
      "", "A narrower student's albert_config.json (same vocabulary and "
      "heads as the teacher's), initialised from --student_init_checkpoint.")
  student_init_checkpoint: str = setting(
      "", "--student_config: the student's initial weights (any layout "
      "--init_checkpoint takes).")
  unlabeled_file: str = setting(
      "", "Records without labels (the formats of --train_file) that the "
      "teacher labels: trained on its soft targets only.")
  temperature: float = setting(
      2.0, "Softmax temperature of the soft targets (the loss is scaled by "
      "its square).")
  alpha: float = setting(
      0.5, "Weight of the soft-target loss on labelled records; the gold "
      "labels' loss has 1 - alpha. 0: the gold labels only (no soft "
      "target, no --intermediate_loss; refused with --unlabeled_file, whose "
      "records would carry no loss).")
  intermediate_loss: str = setting(
      "none", "none; attention_relation: MiniLM's KL of the last "
      "application's attention distributions and value relations; "
      "hidden_projection: the MSE of the last hidden states only (through "
      "a learned projection when the widths differ); tinybert: TinyBERT's "
      "layer mapping (student layer m to teacher layer m*L/k; L a multiple "
      "of k): the MSE of the embedding outputs, and per mapped layer of the "
      "raw attention scores and the hidden states (learned projections "
      "when the widths differ). Ignored at --alpha=0.",
      choices=INTERMEDIATE_LOSSES)
  intermediate_weight: float = setting(
      1.0, "Weight of --intermediate_loss in the training loss.")
