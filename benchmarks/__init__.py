"""Speed and size measurements, grouped by the stage a user runs.

  data/            data creation, the input pipeline, padding, splitters
  pretraining/     the pretraining step against Model Garden, length buckets,
                   resuming
  finetuning/      fine-tuning against Hugging Face and Model Garden
  serving/         latency of the SavedModel, LiteRT and ONNX Runtime
  memory/          peak memory and recomputation
  investigations/  one-off measurements behind a decision (kept runnable)

  common.py        the shared harness: alternating contenders, quiet rounds,
                   tables, BENCHMARKS.md sections and their figures
  roofline.py      the matmul peak at a step's shapes (`python -m
                   benchmarks.roofline`), called by the harnesses in-process
  ceilings.py      the one definition of FLOPs and of a speed ceiling
  accuracy.py      accuracy figures: selection on dev, report on test,
                   paired seeds, no row within noise of chance
  revision.py      the code revision a cached run is keyed by
  charts.py        PNG charts (matplotlib: pip install ".[benchmarks]")
  figures.py       the figures block: the one form of a first-table row,
                   under a digest, and the check summary applies to it
  summary.py       BENCHMARKS.md's first table, from the sections' figures
                   (`--run`: every harness's short mode first)
  run_all.py       the harnesses of the first table and their short runs

Every command is `python -m benchmarks.<stage>.<name>`; `--write` refreshes
its BENCHMARKS.md section. The flat names of before the grouping
(`benchmarks.bench_serving`, ...) fail with one line naming the new path.
"""

from albert_common import moved_modules

MOVED = {
    "benchmarks.bench_data_creation": "benchmarks.data.creation",
    "benchmarks.bench_input_pipeline": "benchmarks.data.input_pipeline",
    "benchmarks.bench_padding": "benchmarks.data.padding",
    "benchmarks.bench_sentence_splitters": "benchmarks.data.sentence_splitters",
    "benchmarks.bench_word_segmentation": "benchmarks.data.word_segmentation",
    "benchmarks.bench_pretraining_step": "benchmarks.pretraining.step",
    "benchmarks.bench_pretraining_buckets":
        "benchmarks.pretraining.length_buckets",
    "benchmarks.bench_resume": "benchmarks.pretraining.resume",
    "benchmarks.bench_finetuning_peers": "benchmarks.finetuning.peers",
    "benchmarks.finetuning_peers_worker": "benchmarks.finetuning.peers_worker",
    "benchmarks.bench_classifier_step": "benchmarks.finetuning.classifier_step",
    "benchmarks.bench_length_buckets": "benchmarks.finetuning.length_buckets",
    "benchmarks.bench_packing": "benchmarks.finetuning.packing",
    "benchmarks.bench_serving": "benchmarks.serving.runtimes",
    "benchmarks.bench_inference": "benchmarks.serving.garden",
    "benchmarks.bench_bucketed_serving": "benchmarks.serving.length_buckets",
    "benchmarks.bench_tflite": "benchmarks.serving.litert",
    "benchmarks.bench_iterator_teardown":
        "benchmarks.investigations.iterator_teardown",
    "benchmarks.bench_small_matmuls": "benchmarks.investigations.small_matmuls",
    "benchmarks.bench_before_after": "benchmarks.investigations.before_after",
    "benchmarks.bench_step_overhead": "benchmarks.investigations.step_overhead",
    "benchmarks.bench_ablations": "benchmarks.investigations.ablations",
    "benchmarks.byte_identity": "benchmarks.investigations.byte_identity",
}

moved_modules.install(MOVED, "BENCHMARKS.md names the commands")
