"""Checkpoint interchange: read any supported layout, load it, write any layout.

Supported inputs (`input_format`, detected from the contents with "auto"):
  ours: a `tf.train.Checkpoint(model=AlbertPretrainer)` (optionally with an
    optimizer, step, ... under other names, which are ignored) or
    `tf.train.Checkpoint(encoder=AlbertEncoder)`; a prefix or a directory
    (its latest checkpoint).
  official: a google-research/albert TF1 checkpoint (`model.ckpt-NNN`, also
    the TF-Hub `module/` prefix); optimizer slots (adam_m, adam_v, lamb_m,
    lamb_v, Adam, ...) and global_step are skipped.
  huggingface: a `model.safetensors` file, a sharded
    `model.safetensors.index.json`, or a folder holding either (+ config.json),
    keys with or without the `albert.` prefix; read with `safetensors.numpy`,
    no torch.
  garden: `tf.train.Checkpoint(encoder=official.nlp.modeling.networks.
    AlbertEncoder)`, as written by Model Garden's
    tf2_albert_encoder_checkpoint_converter, or a Model Garden task model
    (BertClassifier, BertSpanLabeler) as its trainers save it, head
    included (task_models.garden).
  keras_hub: a keras-hub ALBERT preset directory (keras_hub_preset), an
    AlbertTextClassifier's with its head.

Outputs (`convert_checkpoint`): ours, official (TF1 names, the files a
tf.compat.v1 Saver writes), huggingface (safetensors + config.json) and
keras_hub (a preset directory with the tokenizer, keras_hub_preset; a
classifier's, ours or any layout's, as an AlbertTextClassifier with its
head and labels.txt).

A fine-tuned task model of ours (a fine-tuning run's --output_dir, a
checkpoint in it, or its --export_dir; task_sources) is written to
huggingface and official as a task model, head included (task_writers):
transformers' AlbertFor* class with id2label and problem_type, or the
official scripts' head names with labels.txt. Its vocabulary (an export's
assets) is written with it unless --spm_model_file / --vocab_file say
otherwise. A run without a task head (pretraining) converts as before.
Another layout's task model (a Hugging Face AlbertFor* folder, an official
fine-tuned checkpoint, a keras-hub or Model Garden task model) written to
ours is written in our task layout, head included
(task_writers.write_ours_task_model), with the tokenizer file of its folder.

Every read is strict: after skipping optimizer state, every source variable
must map to a model variable, every encoder variable must be present and
every shape must agree; all violations are reported together in one
`UserInputError`. Inputs and outputs may be on any TensorFlow filesystem
(`gs://`); every output is written under a temporary name and renamed. A
pretraining head (masked_lm, sentence_order) is either complete in the
source or absent; an absent head is reported, never filled in silently.

This module is the public face of the stages, one module each:
  locate           path resolution and layout detection
  reading/         `readers.read_weights`: dispatch to official_reader,
                   huggingface_reader, object_readers (ours, garden),
                   keras_hub_preset
  name_tables, mapping   the declarative name tables and their strict use
  model_variables  our Keras models' variables by canonical name
  writers          ours, official, huggingface (keras_hub_preset_writer:
                   presets)
  task_sources, task_writers   our task models in, other layouts' out
  weight_loading   `load_weights_into` and its `LoadReport`
"""

from typing import Optional

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.run_constants import INPUT_FORMATS
from albert_common.run_constants import OUTPUT_FORMATS
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints import sentencepiece_files
from albert_tf.checkpoints import wordpiece_files
from albert_tf.checkpoints.keras_hub_presets import preset as keras_hub_preset
from albert_tf.checkpoints.keras_hub_presets import (
  wordpiece as keras_hub_wordpiece,
)
from albert_tf.checkpoints.keras_hub_presets import (
  writer as keras_hub_preset_writer,
)
from albert_tf.checkpoints.locate import detect_format
from albert_tf.checkpoints.locate import resolve_path
from albert_tf.checkpoints.mapping import map_from_ours
from albert_tf.checkpoints.mapping import map_to_ours
from albert_tf.checkpoints.model_variables import canonical_variables
from albert_tf.checkpoints.reading.object_readers import build_garden_encoder
from albert_tf.checkpoints.reading.readers import Weights
from albert_tf.checkpoints.reading.readers import read_weights
from albert_tf.checkpoints.task_models import source_paths
from albert_tf.checkpoints.task_models import task_sources
from albert_tf.checkpoints.task_models import task_writers
from albert_tf.checkpoints.task_models.folder_vocabulary import vocabulary_in
from albert_tf.checkpoints.weight_loading import LoadReport
from albert_tf.checkpoints.weight_loading import load_weights_into
from albert_tf.checkpoints.writers import write_huggingface
from albert_tf.checkpoints.writers import write_official
from albert_tf.checkpoints.writers import write_ours
from albert_tf.config import AlbertConfig

__all__ = [
    "INPUT_FORMATS", "OUTPUT_FORMATS", "LoadReport", "Weights",
    "build_garden_encoder", "canonical_variables", "convert_checkpoint",
    "detect_format", "load_weights_into", "map_from_ours", "map_to_ours",
    "read_weights", "resolve_path", "write_huggingface", "write_official",
    "write_ours",
]


def convert_checkpoint(config: AlbertConfig, input_checkpoint: str,
                       output_checkpoint: str, output_format: str,
                       input_format: str = "auto",
                       spm_model_file: Optional[str] = None,
                       do_lower_case: bool = True,
                       keras_hub_tokenizer: str = "stock",
                       vocab_file: Optional[str] = None) -> str:
  """Converts between layouts; returns a one-line description.

  Stages: check the output can be written (before reading anything), read
  (strictly), check a stored config.json against `config`, write.

  Args:
    config: the model's AlbertConfig.
    input_checkpoint: see `read_weights`.
    output_checkpoint: a checkpoint prefix (ours, official; the directory is
      created) or, for huggingface, a directory (model.safetensors +
      config.json) or a .safetensors file name.
    output_format: one of OUTPUT_FORMATS.
    input_format: one of INPUT_FORMATS.
    spm_model_file, do_lower_case, keras_hub_tokenizer: the tokenizer, for
      keras_hub output (keras_hub_preset_writer.write_preset).
    vocab_file: a WordPiece vocab.txt (used when spm_model_file is not
      given, as officially), written with the output (wordpiece_files):
      beside an ours / official checkpoint, as vocab.txt + tokenizer.json in
      a Hugging Face folder, as keras-hub's BertTokenizer in a preset.

  Example: one of our pretraining checkpoints to a Hugging Face folder and
  back into an encoder.

  >>> import os, tempfile
  >>> import numpy as np
  >>> import tensorflow as tf
  >>> from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer
  >>> from albert_tf.checkpoints import converter
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> pretrainer = AlbertPretrainer(AlbertEncoder(config))
  >>> folder = tempfile.mkdtemp()
  >>> prefix = tf.train.Checkpoint(model=pretrainer).write(
  ...     os.path.join(folder, "ckpt"))
  >>> converter.detect_format(prefix)
  'ours'
  >>> hf_dir = os.path.join(folder, "hf")
  >>> line = converter.convert_checkpoint(config, prefix, hf_dir, "huggingface")
  >>> line.split(" from ")[0]
  'converted 32 variables (heads: masked_lm, sentence_order)'
  >>> sorted(os.listdir(hf_dir))
  ['config.json', 'model.safetensors']
  >>> encoder = AlbertEncoder(config)
  >>> converter.load_weights_into(encoder, hf_dir).format
  'huggingface'
  >>> np.array_equal(encoder.get_embedding_table(),
  ...                pretrainer.encoder.get_embedding_table())
  True
  """
  paths = _task_source_paths(input_checkpoint, output_format, input_format)
  if paths is not None and not (spm_model_file or vocab_file):
    spm_model_file, vocab_file = source_paths.vocabulary_of(paths)
  spm_model_file, vocab_file, tokens = _check_request(
      config, output_checkpoint, output_format, spm_model_file, vocab_file,
      keras_hub_tokenizer)
  source = (task_sources.read_task_source(paths, config)
            if paths is not None else None)
  if source is not None and output_format != "keras_hub":
    return _convert_task_model(source, config, input_checkpoint,
                               output_checkpoint, output_format,
                               spm_model_file, vocab_file, do_lower_case,
                               tokens)
  weights, labels = _weights_to_write(source, config, input_checkpoint,
                                      input_format, output_format)
  weights.check_config(config)
  if (output_format == "ours" and weights.head is not None and
      weights.preset is None and not (spm_model_file or vocab_file)):
    spm_model_file, vocab_file, tokens = _own_vocabulary(input_checkpoint,
                                                         config)
  source_head = weights.head
  where = _write_weights(weights, config, output_checkpoint, output_format,
                         spm_model_file, do_lower_case, keras_hub_tokenizer,
                         tokens, labels)
  if output_format != "keras_hub":  # else in the preset
    where += _write_tokenizer(tokens, spm_model_file, vocab_file,
                              output_format, output_checkpoint,
                              do_lower_case, config)
  # A task head written in our task layout (write_ours_task_model).
  written = source_head if weights.head is None else None
  return _summary(weights, where, output_format, written)


def _summary(weights: Weights, where: str, output_format: str,
             written_head=None) -> str:
  """The conversion's line (logged as a warning when a task head is left
  out): the variables and heads written, pretraining and task heads
  (`written_head`: the source's task head, written with the rest)."""
  from albert_tf.checkpoints.task_models import head_tables
  heads = sorted(name_tables.heads_in(weights.arrays) |
                 {head_tables.kind_of(n) for n in weights.arrays} - {None})
  count = len(weights.arrays)
  if written_head is not None:
    heads.append(written_head.kinds[0])
    count += len(written_head.arrays)
  summary = (f"converted {count} variables "
             f"(heads: {', '.join(heads) or 'none'}) from {weights.path} "
             f"({weights.format}) to {where} ({output_format})")
  if weights.head is not None:
    # Said, never dropped silently: the fine-tuning tools take the source
    # itself, head included.
    summary += (f"; its task head ({', '.join(sorted(weights.head.arrays))})"
                " is not written: give the source itself to the fine-tuning "
                "tool as --init_checkpoint")
    logging.warning("%s", summary)
  return summary


def _weights_to_write(source, config: AlbertConfig, input_checkpoint: str,
                      input_format: str, output_format: str):
  """(Weights, label names or None) to write: our classifier's (`source`,
  as a keras-hub preset), else the input read; for keras_hub, another
  layout's sequence-classifier head goes into the preset (and is no
  longer reported as left out)."""
  if source is not None:
    if source.head != "classifier":
      raise UserInputError(
          f"--input_checkpoint={input_checkpoint} holds a {source.head} "
          "head; keras-hub presets are written for sequence classifiers "
          "(AlbertTextClassifier) only")
    return (Weights(arrays=source.arrays, format="ours",
                    path=source.paths.prefix), source.labels)
  weights = read_weights(input_checkpoint, config, input_format)
  labels = None
  if output_format == "keras_hub":
    head, labels = _source_classifier(weights, config)
    weights.arrays.update(head)
    if head:
      weights.head = None  # written with the preset
  return weights, labels


def _source_classifier(weights: Weights, config: AlbertConfig):
  """(our classifier head's canonical arrays, its label names or None) of
  a source's sequence-classifier head (a keras-hub AlbertTextClassifier, a
  Model Garden BertClassifier, a Hugging Face AlbertForSequenceClass-
  ification, an official run_classifier.py output), for a keras-hub
  preset; ({}, None) when it holds none (an official [1, H] head may be
  run_race's: it is not taken)."""
  from albert_tf.checkpoints.task_models import head_tables
  from albert_tf.checkpoints.task_models import task_heads
  head = weights.head
  if head is None or "classifier" not in head.kinds:
    return {}, None
  width = task_heads.stored_labels(
      head, head_tables.head_table(head.layout, "classifier"))
  if head.kinds != ["classifier"] and width == 1:
    return {}, None
  arrays = task_heads.fit_head(head, "classifier", config.hidden_size, width,
                               task_heads.HeadRequest())
  return arrays, head.labels


def _check_request(config: AlbertConfig, output_checkpoint: str,
                   output_format: str, spm_model_file: Optional[str],
                   vocab_file: Optional[str], keras_hub_tokenizer: str):
  """(spm_model_file, vocab_file, the vocab file's tokens or None), after
  every check that can fail before a checkpoint is read."""
  from data_pipeline.tokenization.factory import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(spm_model_file, vocab_file)
  tokens = None
  if vocab_file:
    tokens = wordpiece_files.check_vocab_file(config, vocab_file)
  if output_format not in OUTPUT_FORMATS:
    raise UserInputError(f"--output_format must be one of {OUTPUT_FORMATS}, "
                         f"got {output_format!r}")
  if output_format in ("official", "huggingface"):
    # Fail on an inexpressible config before reading anything.
    name_tables.table_for(output_format, config)
  if output_format == "keras_hub":
    keras_hub_preset_writer.check_output(
        config, output_checkpoint, spm_model_file,
        "wordpiece" if tokens is not None else keras_hub_tokenizer)
  return spm_model_file, vocab_file, tokens


def _write_weights(weights, config: AlbertConfig, output_checkpoint: str,
                   output_format: str, spm_model_file: Optional[str],
                   do_lower_case: bool, keras_hub_tokenizer: str,
                   tokens, labels=None) -> str:
  """Writes the weights read in `output_format`; returns where, in words."""
  if output_format == "official":
    write_official(weights.arrays, config, output_checkpoint)
    return output_checkpoint
  if output_format == "huggingface":
    return write_huggingface(weights.arrays, config, output_checkpoint)
  if output_format == "keras_hub" and tokens is not None:
    return keras_hub_wordpiece.write_wordpiece_preset(
        weights.arrays, config, output_checkpoint, tokens, do_lower_case)
  if output_format == "keras_hub":
    return keras_hub_preset_writer.write_preset(
        weights.arrays, config, output_checkpoint, spm_model_file,
        do_lower_case=do_lower_case, keras_hub_tokenizer=keras_hub_tokenizer,
        labels=labels)
  if weights.head is not None:  # a task model: in our task layout
    where = task_writers.write_ours_task_model(weights, config,
                                               output_checkpoint)
    weights.head = None  # written
  else:
    root = write_ours(weights.arrays, config, output_checkpoint)
    where = f"{output_checkpoint} (tf.train.Checkpoint({root}=...))"
  if weights.preset is not None:  # its config (again) and tokenizer
    where += "; " + keras_hub_preset.write_companions(weights.preset,
                                                      output_checkpoint)
  return where


def _own_vocabulary(input_checkpoint: str, config: AlbertConfig):
  """(spm_model_file, vocab_file, tokens) of the one tokenizer file in a
  task model's input folder (a Hugging Face folder's spiece.model or
  vocab.txt), written with it in our task layout; ("", "", None) if none."""
  # The lookup the fine-tuning settings make in --init_checkpoint.
  found = vocabulary_in(input_checkpoint, "input_checkpoint")
  vocab_file = found.get("vocab_file", "")
  tokens = (wordpiece_files.check_vocab_file(config, vocab_file)
            if vocab_file else None)
  return found.get("spm_model_file", ""), vocab_file, tokens


def _huggingface_folder(output_checkpoint: str) -> str:
  return (file_io.dirname(output_checkpoint)
          if output_checkpoint.endswith(".safetensors") else output_checkpoint)


def _write_sentencepiece(spm_model_file: str, output_format: str,
                         output_checkpoint: str, do_lower_case: bool,
                         config: AlbertConfig) -> str:
  """The SentencePiece model with the output; returns what was written."""
  if output_format == "huggingface":
    return sentencepiece_files.write_huggingface_tokenizer(
        spm_model_file, _huggingface_folder(output_checkpoint),
        do_lower_case, config.max_position_embeddings)
  return sentencepiece_files.write_beside_checkpoint(spm_model_file,
                                                     output_checkpoint)


def _write_vocabulary(tokens, output_format: str, output_checkpoint: str,
                      vocab_file: str, do_lower_case: bool,
                      config: AlbertConfig) -> str:
  """The WordPiece vocabulary with the output; returns what was written."""
  if output_format == "huggingface":
    return wordpiece_files.write_huggingface_tokenizer(
        tokens, _huggingface_folder(output_checkpoint), do_lower_case,
        config.max_position_embeddings)
  return wordpiece_files.write_beside_checkpoint(
      tokens, output_checkpoint, file_io.basename(vocab_file))


def _task_source_paths(input_checkpoint: str, output_format: str,
                       input_format: str):
  """task_sources.SourcePaths of a run dir / export / checkpoint in a run
  written as a task model (huggingface, official; keras_hub for a
  classifier), else None."""
  if (output_format not in task_writers.TASK_FORMATS + ("keras_hub",) or
      input_format not in ("auto", "ours")):
    return None
  paths = task_sources.find_source(input_checkpoint)
  if (paths is not None and paths.kind == "run" and
      detect_format(paths.prefix) != "ours"):
    return None  # a Model Garden task model beside a config has model/ keys
  return paths


def _convert_task_model(source, config: AlbertConfig, input_checkpoint: str,
                        output_checkpoint: str, output_format: str,
                        spm_model_file: Optional[str],
                        vocab_file: Optional[str], do_lower_case: bool,
                        tokens) -> str:
  """Writes our task model `source` (task_writers) with its vocabulary;
  returns the conversion's line."""
  task_writers.check_writable(source, output_format, output_checkpoint)
  if not (spm_model_file or vocab_file):
    logging.warning(
        "%s holds no vocabulary (a run dir has its export's, when it "
        "exported): no tokenizer is written with the model; give "
        "--spm_model_file or --vocab_file", input_checkpoint)
  where = task_writers.write_task_model(source, config, output_checkpoint,
                                        output_format)
  where += _write_tokenizer(tokens, spm_model_file, vocab_file,
                            output_format, output_checkpoint, do_lower_case,
                            config)
  note = f"; {source.note}" if source.note else ""
  return (f"converted {len(source.arrays)} variables (heads: {source.head}) "
          f"from {source.paths.prefix} (ours, {source.head} head, "
          f"{_describe_labels(source)}{note}) to {where} ({output_format})")


def _write_tokenizer(tokens, spm_model_file: Optional[str],
                     vocab_file: Optional[str], output_format: str,
                     output_checkpoint: str, do_lower_case: bool,
                     config: AlbertConfig) -> str:
  """Writes the vocabulary beside the converted weights; returns "; where"
  per file written ("" for none)."""
  where = ""
  if tokens is not None:
    where += "; " + _write_vocabulary(tokens, output_format,
                                      output_checkpoint, vocab_file,
                                      do_lower_case, config)
  if spm_model_file:
    where += "; " + _write_sentencepiece(spm_model_file, output_format,
                                         output_checkpoint, do_lower_case,
                                         config)
  return where


def _describe_labels(source) -> str:
  """The labels of a task source, in words, for the conversion's line."""
  if source.labels is not None:
    return f"labels {', '.join(source.labels)}"
  if source.problem_type == "regression":
    return "regression"
  if source.head in ("classifier", "token_classifier"):
    return (f"{source.num_labels} unnamed labels: the run recorded no "
            "labels.json")
  return "no labels"
