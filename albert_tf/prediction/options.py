"""tools.predict's settings and the checks made before TensorFlow loads.

Imports no TensorFlow.
"""

import dataclasses

from albert_common.errors import UserInputError
from albert_common.settings_fields import setting

OUTPUT_FORMATS = ("jsonl", "parquet", "csv")
INPUT_FORMATS = ("auto", "csv", "tsv", "jsonl", "parquet", "text")
EMBEDDINGS = ("pooled", "mean")
RUNTIMES = ("savedmodel", "onnx", "litert")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PredictOptions:
  """Settings of tools.predict (each field is its flag)."""

  model: str = setting(
      help="A fine-tuned export (the --export_dir of run_classifier, "
      "run_ner, run_squad, run_multiple_choice or run_race), or an encoder "
      "export folder "
      "(export_savedmodel's, holding encoder/ and preprocessor/). Its kind, "
      "labels and columns are read from it.")
  input_file: str = setting(
      help="Input files: comma-separated paths or globs, on any filesystem "
      "(gs://), .gz of the text formats read as a stream.")
  output_dir: str = setting(
      help="Where the shards, rejects and manifest.json go (any "
      "filesystem). A rerun into it skips the shards already written.")
  output_format: str = setting(
      "jsonl", "Format of the output shards.", choices=OUTPUT_FORMATS)
  input_format: str = setting(
      "auto", "Format of the inputs: csv, tsv, jsonl (.json too), parquet, "
      "text (one record a line, its column `text`). auto: from the "
      "extension (.txt is text).", choices=INPUT_FORMATS)
  text_column: str = setting(
      "text", "The text column. Left at `text` and missing from a file: "
      "`sentence`, else `sentence1` (as the fine-tuning tools).")
  text_b_column: str = setting(
      "", "The second text of a sentence-pair model (required by one).")
  context_column: str = setting(
      "context", "SQuAD and multiple-choice exports: the column of the "
      "passage (multiple choice: optional; left at `context` and missing, "
      "SWAG's `sent1`, else none).")
  question_column: str = setting(
      "question", "SQuAD and multiple-choice exports: the column of the "
      "question (multiple choice: optional; left at `question` and "
      "missing, SWAG's `sent2`, else none).")
  choices_column: str = setting(
      "choices", "Multiple-choice exports: a list of the choices (JSON / "
      "Parquet list, or a JSON list in a CSV field); missing from a file: "
      "the numbered columns <name>0, <name>1, ... (left at `choices`: "
      "SWAG's ending0, ending1, ...).")
  runtime: str = setting(
      "savedmodel", "What runs the model: the SavedModel, or the ONNX / "
      "LiteRT file made from it in the export folder (onnx/model.onnx, "
      "litert/model.tflite; every export kind, NER's and SQuAD's windows "
      "and spans computed around the file).", choices=RUNTIMES)
  id_column: str = setting(
      "", "A column copied into every output row under its own name. "
      "Empty: rows are keyed by `file` and `row` (0-based record number).")
  embeddings: str = setting(
      "pooled", "Encoder exports: `pooled` (the pooled output) or `mean` "
      "(the mean of the sequence output over real tokens).",
      choices=EMBEDDINGS)
  batch_size: int = setting(
      32, "Rows per model call; rows of similar length are batched "
      "together (within one of the export's length buckets for the kinds "
      "that run at them: NER, SQuAD, multiple choice, LiteRT).")
  rows_per_shard: int = setting(
      10000, "Input records per output shard (a shard is a fixed range of "
      "one input file's records, so a rerun redoes only missing ones).")
  skip_bad_rows: bool = setting(
      False, "Write malformed rows (bad JSON, missing column, undecodable "
      "bytes) to rejects-*.jsonl with the reason and count them in the "
      "manifest, instead of stopping at the first.")
  count_rows: bool = setting(
      True, "Read the inputs once before predicting: bad rows are found "
      "before any shard is written, and the progress shows an ETA.")
  runner: str = setting(
      "", "Apache Beam runner: DirectRunner, DataflowRunner, FlinkRunner, "
      "SparkRunner, PortableRunner, PrismRunner; the same files through "
      "Beam's RunInference. Default: in this process. With a runner, flags "
      "not defined here are Beam pipeline options (--direct_num_workers, "
      "--direct_running_mode, --project, --region, --temp_location, "
      "--requirements_file, --setup_file, ...).")


def check_options(options: PredictOptions) -> None:
  """Checks the settings that need no file.

  Raises:
    UserInputError: naming the flag.
  """
  for name in ("model", "input_file", "output_dir"):
    if not getattr(options, name):
      raise UserInputError(f"--{name} is required")
  for name, choices in (("output_format", OUTPUT_FORMATS),
                        ("input_format", INPUT_FORMATS),
                        ("embeddings", EMBEDDINGS),
                        ("runtime", RUNTIMES)):
    if getattr(options, name) not in choices:
      raise UserInputError(f"--{name}={getattr(options, name)} is not one "
                           f"of {', '.join(choices)}")
  for name in ("batch_size", "rows_per_shard"):
    if getattr(options, name) < 1:
      raise UserInputError(f"--{name}={getattr(options, name)} must be "
                           "positive")
