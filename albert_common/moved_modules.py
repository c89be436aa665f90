"""Modules that moved when the packages were regrouped by concern.

`import data_pipeline.glue_examples` (or `from data_pipeline import
glue_examples`) fails with one line naming the new path instead of a bare
"No module named". data_pipeline and albert_tf install the finder when they
load; it is consulted only for names no real module has.
"""

import importlib.abc
import sys

MOVED = {
    "albert_tf.checkpoints.huggingface_reader":
        "albert_tf.checkpoints.reading.huggingface_reader",
    "albert_tf.checkpoints.keras_hub_preset":
        "albert_tf.checkpoints.keras_hub_presets.preset",
    "albert_tf.checkpoints.keras_hub_preset_writer":
        "albert_tf.checkpoints.keras_hub_presets.writer",
    "albert_tf.checkpoints.keras_hub_vocabulary":
        "data_pipeline.tokenization.keras_hub_vocabulary",
    "albert_tf.checkpoints.keras_hub_wordpiece":
        "albert_tf.checkpoints.keras_hub_presets.wordpiece",
    "albert_tf.checkpoints.object_readers":
        "albert_tf.checkpoints.reading.object_readers",
    "albert_tf.checkpoints.official_reader":
        "albert_tf.checkpoints.reading.official_reader",
    "albert_tf.checkpoints.readers": "albert_tf.checkpoints.reading.readers",
    "albert_tf.checkpoints.torch_pickle":
        "albert_tf.checkpoints.reading.torch_pickle",
    "albert_tf.exports.classifier": "albert_tf.exports.serving.classifier",
    "albert_tf.exports.inspection": "albert_tf.saved_model_inspection",
    "albert_tf.exports.race_serving": "albert_tf.exports.serving.race",
    "albert_tf.exports.squad_export":
        "albert_tf.exports.serving.squad_export",
    "albert_tf.exports.squad_serving":
        "albert_tf.exports.serving.squad_serving",
    "albert_tf.exports.squad_serving_context":
        "albert_tf.exports.serving.squad_serving_context",
    "albert_tf.exports.squad_serving_wordpiece":
        "albert_tf.exports.serving.squad_serving_wordpiece",
    "albert_tf.exports.tflite": "albert_tf.exports.litert.converter",
    "albert_tf.exports.tflite_eval": "albert_tf.exports.dev_evaluation",
    "albert_tf.exports.litert.evaluation": "albert_tf.exports.dev_evaluation",
    "albert_tf.exports.tflite_report": "albert_tf.exports.litert.report",
    "albert_tf.exports.tflite_runner": "albert_tf.exports.litert.runner",
    "albert_tf.training.bucketed_steps":
        "albert_tf.training.finetuning.bucketed_steps",
    "albert_tf.training.classifier_finetuning":
        "albert_tf.training.finetuning.tasks.classifier",
    "albert_tf.training.finetuning.classifier":
        "albert_tf.training.finetuning.tasks.classifier",
    "albert_tf.training.finetuning.multiple_choice":
        "albert_tf.training.finetuning.tasks.multiple_choice",
    "albert_tf.training.finetuning.ner":
        "albert_tf.training.finetuning.tasks.ner",
    "albert_tf.training.finetuning.own_data":
        "albert_tf.training.finetuning.tasks.own_data",
    "albert_tf.training.finetuning.race":
        "albert_tf.training.finetuning.tasks.race",
    "albert_tf.training.finetuning.squad":
        "albert_tf.training.finetuning.tasks.squad",
    "albert_tf.training.finetuning_model":
        "albert_tf.training.finetuning.model",
    "albert_tf.training.finetuning_params":
        "albert_tf.training.finetuning.params",
    "albert_tf.training.finetuning_runner":
        "albert_tf.training.finetuning.runner",
    "albert_tf.training.finetuning_task":
        "albert_tf.training.finetuning.task",
    "albert_tf.training.multi_worker":
        "albert_tf.training.finetuning.multi_worker",
    "albert_tf.training.pretraining_driver":
        "albert_tf.training.pretraining.driver",
    "albert_tf.training.pretraining_objective":
        "albert_tf.training.pretraining.objective",
    "albert_tf.training.pretraining_params":
        "albert_tf.training.pretraining.params",
    "albert_tf.training.pretraining_runner":
        "albert_tf.training.pretraining.runner",
    "albert_tf.training.race_finetuning":
        "albert_tf.training.finetuning.tasks.race",
    "albert_tf.training.squad_finetuning":
        "albert_tf.training.finetuning.tasks.squad",
    "albert_tf.training.task_settings":
        "albert_tf.training.finetuning.task_settings",
    "data_pipeline.beam_file_io":
        "data_pipeline.pretraining.beam.filesystems",
    "data_pipeline.beam_pipeline": "data_pipeline.pretraining.beam.pipeline",
    "data_pipeline.control_ids": "data_pipeline.tokenization.control_ids",
    "data_pipeline.corpus_options": "data_pipeline.corpora.corpus_options",
    "data_pipeline.corpus_pieces": "data_pipeline.corpora.corpus_pieces",
    "data_pipeline.data_creation_params":
        "data_pipeline.pretraining.data_creation_params",
    "data_pipeline.document_pieces": "data_pipeline.corpora.document_pieces",
    "data_pipeline.glue_examples": "data_pipeline.tasks.glue.examples",
    "data_pipeline.glue_features": "data_pipeline.tasks.glue.features",
    "data_pipeline.glue_metrics": "data_pipeline.tasks.glue.metrics",
    "data_pipeline.instance_options":
        "data_pipeline.pretraining.instance_options",
    "data_pipeline.jsonl_corpus": "data_pipeline.corpora.jsonl_corpus",
    "data_pipeline.length_buckets": "data_pipeline.tasks.length_buckets",
    "data_pipeline.mlm_masking": "data_pipeline.pretraining.mlm_masking",
    "data_pipeline.parquet_corpus": "data_pipeline.corpora.parquet_corpus",
    "data_pipeline.pretraining_buckets": "data_pipeline.pretraining.buckets",
    "data_pipeline.pretraining_input": "data_pipeline.pretraining.reader",
    "data_pipeline.pretraining_plan": "data_pipeline.pretraining.plan",
    "data_pipeline.pretraining_stats": "data_pipeline.pretraining.stats",
    "data_pipeline.pretraining_worker": "data_pipeline.pretraining.worker",
    "data_pipeline.pretraining_writer": "data_pipeline.pretraining.writer",
    "data_pipeline.race_examples": "data_pipeline.tasks.race.examples",
    "data_pipeline.race_features": "data_pipeline.tasks.race.features",
    "data_pipeline.record_stream": "data_pipeline.pretraining.record_stream",
    "data_pipeline.sentence_corpus":
        "data_pipeline.pretraining.sentence_corpus",
    "data_pipeline.sentence_splitter":
        "data_pipeline.corpora.sentence_splitter",
    "data_pipeline.sentencepiece_offsets":
        "data_pipeline.tokenization.sentencepiece_offsets",
    "data_pipeline.sentencepiece_trainer":
        "data_pipeline.tokenization.sentencepiece_trainer",
    "data_pipeline.shard_files": "data_pipeline.pretraining.shard_files",
    "data_pipeline.sop_instances": "data_pipeline.pretraining.sop_instances",
    "data_pipeline.squad_examples": "data_pipeline.tasks.squad.examples",
    "data_pipeline.squad_features": "data_pipeline.tasks.squad.features",
    "data_pipeline.squad_metrics": "data_pipeline.tasks.squad.metrics",
    "data_pipeline.squad_postprocess":
        "data_pipeline.tasks.squad.postprocess",
    "data_pipeline.stdlib_corpus": "data_pipeline.corpora.stdlib_corpus",
    "data_pipeline.tf_tokenization":
        "data_pipeline.tokenization.tf_sentencepiece",
    "data_pipeline.tf_wordpiece_tokenization":
        "data_pipeline.tokenization.tf_wordpiece",
    "data_pipeline.tfrecord_io": "data_pipeline.pretraining.tfrecord_io",
    "data_pipeline.tfrecord_schema":
        "data_pipeline.pretraining.tfrecord_schema",
    "data_pipeline.tokenized_paragraph":
        "data_pipeline.tokenization.tokenized_paragraph",
    "data_pipeline.tokenizer_factory": "data_pipeline.tokenization.factory",
    "data_pipeline.word_segmentation":
        "data_pipeline.tokenization.word_segmentation",
    "data_pipeline.wordpiece_offsets":
        "data_pipeline.tokenization.wordpiece_offsets",
    "data_pipeline.wordpiece_tokenization":
        "data_pipeline.tokenization.wordpiece_tokenizer",
    "data_pipeline.wordpiece_trainer":
        "data_pipeline.tokenization.wordpiece_trainer",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
  """Answers an import of a moved module with where it is now.

  ImportError, not ModuleNotFoundError: `from package import name` turns the
  latter into its own "cannot import name" and drops the message.
  """

  def __init__(self, moved: dict, where: str):
    self.moved = moved
    self.where = where

  def find_spec(self, fullname, path=None, target=None):
    if fullname in self.moved:
      raise ImportError(
          f"{fullname} moved to {self.moved[fullname]} ({self.where})",
          name=fullname)
    return None


def install(moved: dict = None,
            where: str = "docs/design.md: the layout") -> None:
  """Appends a finder for `moved` (old -> new module name; default: the
  library's MOVED) to sys.meta_path once, after the real finders. `where`
  ends the message: the document that shows the layout."""
  table = MOVED if moved is None else moved
  if not any(isinstance(f, _MovedModuleFinder) and f.moved is table
             for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder(table, where))
