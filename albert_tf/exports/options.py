"""Checks of an export's arguments, made before anything is built.

Imports no TensorFlow (nor does anything it imports), so
tools/export_savedmodel.py runs these checks in its first second, before
TensorFlow's ~5 s import; the exports run the same ones for library callers.
"""

import dataclasses
from typing import Collection, Optional, Tuple

from absl import logging

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf import saved_model_inspection as inspection
from albert_tf.checkpoints import configs
from albert_tf.config import AlbertConfig
from data_pipeline.corpora.record_files import RecordFileOptions
from data_pipeline.tasks import length_buckets as length_buckets_lib
from data_pipeline.tasks.multiple_choice.examples import ChoiceColumns
from data_pipeline.tasks.own_data.examples import TextColumns
from data_pipeline.tokenization import factory as tokenizer_factory

# --input_format values of an encoder export (checkpoint layouts).
EXPORT_INPUT_FORMATS = ("auto", "ours", "official", "huggingface", "garden")

# --quantize values of a LiteRT export.
QUANTIZE_CHOICES = ("none", "float16", "dynamic_int8")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EncoderExportParams(FlatConstructible):
  """Settings of tools.export_savedmodel (each field is its flag)."""

  albert_config_file: str = setting(
      help="albert_config.json (or Hugging Face config.json) of the model.")
  init_checkpoint: str = setting(
      help="Checkpoint prefix, .safetensors file or directory.")
  spm_model_file: str = setting(
      "", "SentencePiece model of the checkpoint (or give --vocab_file).")
  vocab_file: str = setting(
      "", "WordPiece vocab.txt of the checkpoint (the Chinese ALBERTs' "
      "vocab_chinese.txt), used when --spm_model_file is not given "
      "(official precedence); the preprocessor runs WordPiece in-graph.")
  export_dir: str = setting(help="Output directory; must not exist yet.")
  do_lower_case: bool = setting(
      True, "Lowercase in the preprocessor (released ALBERT: true).")
  with_mlm: bool = setting(
      False, "Also export the masked-LM head as the encoder's `mlm` "
      "sub-object and signature.")
  seq_length: int = setting(
      128, "Default sequence length of the preprocessor (if unset: at most "
      "the config's max_position_embeddings).")
  length_buckets: str = setting(
      "auto", "The preprocessor's raw-text signatures and endpoints "
      "(serving_default, two_segments, serve) give a request at the "
      "smallest of these lengths that holds it. auto: powers of two from "
      "32, then --seq_length; none: always --seq_length; or increasing "
      "lengths <= --seq_length, e.g. 32,64. Calling the preprocessor "
      "(hub.KerasLayer) and bert_pack_inputs keep TF Hub's fixed length.")
  input_format: str = setting(
      "auto", "Layout of --init_checkpoint; auto detects it.",
      choices=EXPORT_INPUT_FORMATS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvalDataParams(FlatConstructible):
  """The dev data a converted model is scored on (export_tflite and
  export_onnx: each field is their flag)."""

  eval_data: Optional[str] = setting(
      None, "Dev data to score each variant on: the GLUE task folder (with "
      "--task_name), the SQuAD dev JSON or the RACE folder; or, for a "
      "model of your own data (run_classifier --train_file, "
      "run_multiple_choice), a dev file of it (CSV, TSV, JSON lines, "
      "Parquet; read with the column flags as in fine-tuning).")
  task_name: Optional[str] = setting(None, "GLUE task of --eval_data.")
  doc_stride: Optional[int] = setting(
      None, "SQuAD: unset, the fine-tuning run's (recorded in the export), "
      "else 128.")
  max_query_length: Optional[int] = setting(
      None, "SQuAD: unset, the fine-tuning run's, else 64.")
  n_best_size: Optional[int] = setting(
      None, "SQuAD: unset, the fine-tuning run's, else 20.")
  max_answer_length: Optional[int] = setting(
      None, "SQuAD: unset, the fine-tuning run's, else 30.")
  # An own-data --eval_data file: its format and columns, as fine-tuning's.
  eval_files: RecordFileOptions = dataclasses.field(
      default_factory=RecordFileOptions)
  eval_text: TextColumns = dataclasses.field(default_factory=TextColumns)
  eval_choices: ChoiceColumns = dataclasses.field(
      default_factory=ChoiceColumns)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TfliteExportParams(EvalDataParams):
  """Settings of tools.export_tflite (each field is its flag)."""

  saved_model: str = setting(
      help="An export: <export_dir>/encoder, or run_classifier / run_squad "
      "/ run_race's --export_dir.")
  output_file: str = setting(
      help="The .tflite file to write (any filesystem).")
  seq_length: int = setting(
      128, "Fixed sequence length (at most the model's "
      "max_position_embeddings).")
  batch_size: int = setting(1, "Fixed batch size.")
  quantize: str = setting(
      "none", "Weights: float32, float16, or int8 with activations "
      "quantized at run time.", choices=QUANTIZE_CHOICES)
  length_buckets: str = setting(
      length_buckets_lib.AUTO, "One signature per length: serving_default "
      "at --seq_length and seq_<N> for each shorter bucket, in one file "
      "with the weights stored once; the runner calls the smallest that "
      "holds a request. auto: powers of two from 32, then --seq_length (as "
      "in fine-tuning); none: one signature; or increasing lengths <= "
      "--seq_length, e.g. 32,64.")
  do_lower_case: bool = setting(
      True, "The tokenizer's (as at fine-tuning), for the runner.")
  num_threads: int = setting(2, "LiteRT interpreter threads.")


def prepare_encoder_export(params: EncoderExportParams,
                           user_set: Collection[str] = ()
                           ) -> Tuple[EncoderExportParams, AlbertConfig]:
  """The settings checked and completed, and the config read (once), before
  TensorFlow is imported: one vocabulary by the official precedence; an
  unset --seq_length longer than the config allows becomes
  max_position_embeddings (logged); then check_encoder_export and the
  buckets.

  Raises:
    UserInputError: naming the flag or file at fault.
  """
  spm_model_file, vocab_file = tokenizer_factory.resolve_vocabulary(
      params.spm_model_file, params.vocab_file)
  params = settings_fields.replace(params,
                                   spm_model_file=spm_model_file or "",
                                   vocab_file=vocab_file or "")
  config = configs.load_albert_config(params.albert_config_file)
  if ("seq_length" not in user_set and
      params.seq_length > config.max_position_embeddings):
    params = settings_fields.replace(
        params, seq_length=config.max_position_embeddings)
    logging.info("using --seq_length=%d (max_position_embeddings of %s)",
                 params.seq_length, params.albert_config_file)
  check_encoder_export(config, params.spm_model_file, params.export_dir,
                       params.do_lower_case, params.seq_length,
                       params.vocab_file)
  export_length_buckets(params.length_buckets, params.seq_length)
  return params, config


def check_export_dir_free(export_dir: str) -> None:
  """Raises UserInputError if `export_dir` exists (exports never overwrite)."""
  if file_io.exists(export_dir):
    raise UserInputError(f"--export_dir {export_dir} already exists; remove "
                         "it or choose another")


def check_encoder_export(config: AlbertConfig, spm_model_file: str,
                         export_dir: str, do_lower_case: bool,
                         seq_length: int, vocab_file: str = None) -> int:
  """Checks what the arguments of `encoder.export_savedmodel` alone show.

  In this order: export_dir is free, seq_length fits the position table,
  the vocabulary (the SentencePiece model, else the WordPiece
  `vocab_file`) loads and has no more entries than the config's vocab_size.

  Returns:
    The vocabulary size.

  Raises:
    UserInputError: naming the flag or file at fault.
  """
  check_export_dir_free(export_dir)
  if not 2 < seq_length <= config.max_position_embeddings:
    raise UserInputError(
        f"--seq_length={seq_length} must be in [3, max_position_embeddings="
        f"{config.max_position_embeddings}]")
  vocab_size = tokenizer_factory.make_tokenizer(
      spm_model_file, vocab_file, do_lower_case=do_lower_case).vocab_size
  if vocab_size > config.vocab_size:
    what = (f"SentencePiece model {spm_model_file} has {vocab_size} pieces"
            if spm_model_file else
            f"--vocab_file={vocab_file} has {vocab_size} tokens")
    raise UserInputError(
        f"{what}, more than the config's vocab_size ({config.vocab_size})")
  return vocab_size


def export_length_buckets(length_buckets, seq_length: int
                          ) -> Tuple[int, ...]:
  """The preprocessor's buckets, ending with seq_length; () or "none" ->
  (seq_length,), no bucketing.

  Args:
    length_buckets: a sequence of ints, or a `--length_buckets` value
      ("auto", "none", "32,64").

  Raises:
    UserInputError: lengths not increasing, not positive or above
      seq_length.
  """
  if not isinstance(length_buckets, str):
    length_buckets = ",".join(str(n) for n in length_buckets)
  return length_buckets_lib.parse_length_buckets(
      length_buckets or length_buckets_lib.NONE,
      seq_length, flag="--length_buckets", max_flag="--seq_length")



def check_saved_model_dir(saved_model: str) -> None:
  """Raises UserInputError unless `saved_model` holds a SavedModel that is
  not an export's preprocessor (an encoder or a fine-tuned model)."""
  if not file_io.isfile(file_io.join(saved_model, "saved_model.pb")):
    if file_io.isfile(file_io.join(saved_model, "encoder", "saved_model.pb")):
      inspection.check_model_savedmodel(saved_model, "--saved_model")
    raise UserInputError(
        f"--saved_model={saved_model} is not a SavedModel (no saved_model.pb)"
        "; expected an export of tools.export_savedmodel (<dir>/encoder) or "
        "of run_classifier / run_squad / run_race --export_dir")
  inspection.check_model_savedmodel(saved_model, "--saved_model")


def check_output_file(output_file: str) -> None:
  """Raises UserInputError if `output_file` is a folder or cannot be
  written (a probe file next to it, removed at once)."""
  if file_io.isdir(output_file):
    raise UserInputError(f"--output_file={output_file} is a folder")
  probe = file_io.temp_name(output_file)
  try:
    file_io.write_atomic(probe, b"")
    file_io.remove(probe)
  except OSError as e:
    raise UserInputError(f"--output_file={output_file} cannot be written: "
                         f"{e.strerror or e}") from None


def check_tflite_request(saved_model: str, output_file: str, seq_length: int,
                         batch_size: int, quantize: str,
                         eval_data: str = "",
                         length_buckets="none") -> Tuple[int, ...]:
  """Checks `tflite.export_tflite`'s arguments before TensorFlow loads.

  In this order: the SavedModel folder exists and holds saved_model.pb
  (not an export's preprocessor), --eval_data exists, --quantize,
  --seq_length against the export's albert_config.json asset (when it has
  one; the position table is checked again after loading), --batch_size,
  --length_buckets, and that the output file can be written (a probe file
  next to it, removed at once).

  Returns:
    The buckets: increasing lengths ending with seq_length.

  Raises:
    UserInputError: naming the flag or path at fault.
  """
  check_saved_model_dir(saved_model)
  if eval_data and not file_io.exists(eval_data):
    raise UserInputError(f"--eval_data={eval_data} does not exist")
  if quantize not in QUANTIZE_CHOICES:
    raise UserInputError(f"--quantize={quantize} must be one of "
                         f"{', '.join(QUANTIZE_CHOICES)}")
  if seq_length < 3:
    raise UserInputError(f"--seq_length={seq_length} must be at least 3")
  config_file = file_io.join(saved_model, "assets", "albert_config.json")
  if file_io.isfile(config_file):
    check_tflite_seq_length(
        seq_length, AlbertConfig.from_json_file(
            config_file).max_position_embeddings)
  if batch_size < 1:
    raise UserInputError(f"--batch_size={batch_size} must be at least 1")
  buckets = export_length_buckets(length_buckets, seq_length)
  check_output_file(output_file)
  return buckets


def check_tflite_seq_length(seq_length: int, max_positions: int) -> None:
  """Raises UserInputError if seq_length exceeds the position table."""
  if seq_length > max_positions:
    raise UserInputError(
        f"--seq_length={seq_length} is above the model's "
        f"max_position_embeddings ({max_positions})")
