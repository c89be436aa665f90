r"""Fine-tune ALBERT for token classification (NER); evaluate; predict.

  python -m tools.run_ner --train_file=conll2003/train.txt \
      --dev_file=conll2003/valid.txt --test_file=conll2003/test.txt \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/conll2003 --do_train --do_eval --do_predict \
      --export_dir=runs/conll2003_export

Files: CoNLL (token ... tag a line, blank line between sentences), JSON
lines ({"tokens": [...], "tags": [...]}, integer tags named by
--label_names) or CLUENER ({"text": ..., "label": {type: {span: [[start,
end]]}}}; with a Chinese model's --vocab_file, tagged character by
character); --input_format from the extension unless set. Tags in IOB2
(BIO), IOB1 or IOBES, detected (--tag_scheme) and written back as given.
Unset hyperparameters follow Hugging Face's run_ner: lr 5e-5, batch 32,
max_seq_length 128, 3 epochs (--num_train_epochs) of the training file,
10% warmup, a checkpoint and dev evaluation per epoch. Long sentences are
cut into windows (--doc_stride); every word gets exactly one tag.
Results: <output_dir>/eval_results.json (seqeval precision, recall, f1 --
strict mode for IOBES --, token accuracy, per entity type), labels.json,
dev_predictions.<ext> and test_predictions.<ext> (the files with the
predicted tags, in their own format), best/, TensorBoard summaries.
--export_dir writes a SavedModel taking raw text and returning entity
labels, character offsets and scores (albert_tf.exports.load_ner).
A bad file is one error line naming path:line (--skip_bad_records skips
and counts bad sentences).
"""

from albert_tf.training.finetuning import ner_settings
from albert_tf.training.finetuning import params as finetuning_params

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(ner_settings.NerOptions, __name__)


def main(argv):
  del argv
  # The settings are built and checked, and every data file read and
  # checked, before TensorFlow is imported (about 5 s): a mistake is
  # reported at once, and nothing is written.
  options, _ = settings_flags.read_settings(ner_settings.NerOptions)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, ner_settings.NER_DEFAULTS)
  ner_settings.check_ner(params, options)
  files = ner_settings.read_files(params, options)
  recipe = ner_settings.ner_recipe(
      params, options, len(files.train.sentences) if files.train else 0,
      user_set)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True,
                                       head_kind="token_classifier")
  options = ner_settings.derive_ner(prepared.params, options, user_set)
  ner_settings.check_ner(prepared.params, options)
  from albert_tf.training.finetuning.tasks import ner as ner_finetuning  # TF
  results = ner_finetuning.run_ner(prepared, options, files)
  settings_flags.print_results(results)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
