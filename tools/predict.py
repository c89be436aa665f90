r"""Predict with a fine-tuned export over files of any size, streaming.

  python -m tools.predict --model=runs/tickets/export \
      --input_file='tickets/*.jsonl.gz' --output_dir=preds/ \
      --text_column=text --id_column=ticket_id --output_format=parquet

reads the export's kind, labels and columns from the export itself
(classifier: `label` and `probabilities` by label name; regression:
`value`; multi-label: `labels` over the threshold and every probability;
NER: `entities` with character offsets; SQuAD: `answer` with its offsets
(--context_column, --question_column); an export_savedmodel folder:
`embedding`, --embeddings=pooled|mean). Inputs: CSV, TSV, JSON lines,
Parquet or plain text (one record a line), local or gs://, globs, .gz.
Outputs: one row per input row, keyed by --id_column (else `file` and
`row`), in shards of --rows_per_shard records, each written atomically
(part-<file>-<shard>.<format>), and manifest.json with the counts per
input file. Rerun the same command after a crash: finished shards are
kept, missing ones computed, and the files end as an uninterrupted run's.
A malformed row stops the run naming file:line (nothing written, with the
default --count_rows); --skip_bad_rows writes it to rejects-*.jsonl.
Memory stays flat in the inputs' size. --runner=DirectRunner (with
--direct_num_workers=2 --direct_running_mode=multi_threading), or
DataflowRunner, FlinkRunner, SparkRunner with their pipeline options, runs
the same pipeline through Apache Beam's RunInference and writes the same
files. See docs/predict.md.
"""

from albert_tf.prediction.options import PredictOptions

from .support import cli
from .support import settings_flags

# Every flag is a field of PredictOptions (name, default and help).
settings_flags.define_flags(PredictOptions, __name__)


def main(argv):
  from albert_tf.prediction import options as predict_options
  params, _ = settings_flags.read_settings(PredictOptions)
  # Checked before TensorFlow is imported.
  predict_options.check_options(params)
  if params.runner:
    from albert_tf.prediction import beam_pipeline
    manifest = beam_pipeline.predict_files_beam(params, argv[1:])
  else:
    from albert_tf.prediction import runner
    manifest = runner.predict_files(params)
  print(f"{manifest['rows']} rows predicted ({manifest['kind']}), "
        f"{manifest['bad_rows']} bad rows, "
        f"{sum(len(i['shards']) for i in manifest['inputs'])} shards in "
        f"{params.output_dir}")


def run():
  cli.run(main, flags_parser=cli.parse_flags_with_beam_options)


if __name__ == "__main__":
  run()
