r"""Convert an exported ALBERT SavedModel to a LiteRT (.tflite) file.

  python -m tools.export_tflite --saved_model=/tmp/sst2_export \
      --output_file=/tmp/sst2/sst2_int8.tflite --seq_length=128 \
      --quantize=dynamic_int8 --eval_data=glue/SST-2 --task_name=SST-2

converts the export's token-ids signature (the encoder of
tools.export_savedmodel, or the --export_dir of run_classifier, run_squad
or run_race) at a fixed --batch_size x --seq_length, with LiteRT built-in
ops only (no Flex ops: stock Android, iOS and web runtimes run it). Inputs:
int32 input_word_ids, input_mask, input_type_ids; outputs keep the
SavedModel's names. Beside the file: the vocabulary (SentencePiece model),
labels.txt, albert_config.json and <file>.json for the reference runner
(albert_tf/exports/tflite_runner.py). It then runs the file with
ai_edge_litert's interpreter and prints the float model's difference from
the SavedModel, a quantized model's top-class agreement with the float
model, and with --eval_data each variant's dev metric.
"""

from absl import flags

from . import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("saved_model", None,
                    "An export: <export_dir>/encoder, or run_classifier / "
                    "run_squad / run_race's --export_dir.", required=True)
flags.DEFINE_string("output_file", None,
                    "The .tflite file to write (any filesystem).",
                    required=True)
flags.DEFINE_integer("seq_length", 128,
                     "Fixed sequence length (at most the model's "
                     "max_position_embeddings).")
flags.DEFINE_integer("batch_size", 1, "Fixed batch size.")
flags.DEFINE_enum("quantize", "none", ["none", "float16", "dynamic_int8"],
                  "Weights: float32, float16, or int8 with activations "
                  "quantized at run time.")
flags.DEFINE_bool("do_lower_case", True,
                  "The tokenizer's (as at fine-tuning), for the runner.")
flags.DEFINE_string("eval_data", None,
                    "Dev data to score each variant on: the GLUE task folder "
                    "(with --task_name), the SQuAD dev JSON or the RACE "
                    "folder.")
flags.DEFINE_string("task_name", None, "GLUE task of --eval_data.")
flags.DEFINE_integer("doc_stride", 128, "SQuAD, as at fine-tuning.")
flags.DEFINE_integer("max_query_length", 64, "SQuAD, as at fine-tuning.")
flags.DEFINE_integer("n_best_size", 20, "SQuAD, as at fine-tuning.")
flags.DEFINE_integer("max_answer_length", 30, "SQuAD, as at fine-tuning.")
flags.DEFINE_integer("num_threads", 2, "LiteRT interpreter threads.")


def main(argv):
  del argv
  from albert_tf.exports import options
  options.check_tflite_request(FLAGS.saved_model, FLAGS.output_file,
                               FLAGS.seq_length, FLAGS.batch_size,
                               FLAGS.quantize)
  from albert_tf.exports.tflite_report import export_and_report
  from albert_tf.exports.tflite_runner import SquadSettings
  result = export_and_report(
      FLAGS.saved_model, FLAGS.output_file, FLAGS.seq_length,
      FLAGS.batch_size, FLAGS.quantize, FLAGS.do_lower_case,
      FLAGS.eval_data, FLAGS.task_name,
      SquadSettings(FLAGS.doc_stride, FLAGS.max_query_length,
                    FLAGS.n_best_size, FLAGS.max_answer_length),
      FLAGS.num_threads)
  print("\n".join(result["lines"]))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
