"""Fault suite, bad input in process: every bad-input case is a
UserInputError naming the file, flag or value, and nothing is left
half-written.

Killed runs: test_faults_killed_runs.py; through the tools:
test_faults_cli.py.
"""

import json
import os

import pytest
import tensorflow as tf

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from tests.project.fault_kit import PREDS
from tests.project.fault_kit import SEQ
from tests.project.fault_kit import latest_step

# --- bad input, in process --------------------------------------------


def _options():
  from data_pipeline.pretraining import instance_options
  return instance_options.InstanceOptions(max_seq_length=SEQ,
                                          max_predictions_per_seq=PREDS)


def _create(corpus, output, spm_model, **kwargs):
  from data_pipeline.pretraining import writer as pretraining_writer
  return pretraining_writer.create_pretraining_data(
      corpus, output, spm_model, _options(), dupe_factor=1, num_workers=1,
      show_progress=False, **kwargs)


def test_missing_and_empty_corpus(tmp_path, spm_model):
  from data_pipeline.tokenization import sentencepiece_trainer
  missing, empty = str(tmp_path / "missing.txt"), tmp_path / "empty.txt"
  empty.write_text("")
  out = str(tmp_path / "out.tfrecord")
  with pytest.raises(UserInputError, match="no such file: .*missing.txt"):
    _create(missing, out, spm_model)
  with pytest.raises(UserInputError, match="empty corpus: .*empty.txt"):
    _create(str(empty), out, spm_model)
  for corpus in (missing, str(empty)):
    with pytest.raises(UserInputError,
                       match=os.path.basename(corpus).replace(".", r"\.")):
      sentencepiece_trainer.train_sentencepiece(
          corpus, str(tmp_path / "spm"), vocab_size=100)
  assert os.listdir(tmp_path) == ["empty.txt"]  # nothing written


def test_non_utf8_fails_by_default_and_is_skipped_and_counted_on_request(
    tmp_path, english_corpus, spm_model):
  corpus = tmp_path / "mixed.txt"
  with open(english_corpus, "rb") as f:
    good = f.read()
  corpus.write_bytes(b"Caf\xe9 au lait.\n" + good)
  out = str(tmp_path / "out.tfrecord")
  with pytest.raises(UserInputError,
                     match=r"mixed.txt:1: not UTF-8 .*--skip_non_utf8_lines"):
    _create(str(corpus), out, spm_model)
  assert sorted(os.listdir(tmp_path)) == ["mixed.txt"]
  stats = _create(str(corpus), out, spm_model, skip_non_utf8_lines=True)
  assert stats["skipped_lines"] == 1 and stats["instances"] > 0


def test_spm_vocabulary_larger_than_config_is_refused(tmp_path, spm_model,
                                                      pretraining_records):
  from albert_tf.training.finetuning import params as finetuning_params
  from data_pipeline.pretraining import reader as pretraining_input
  from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  small = AlbertConfig(vocab_size=1000)
  with pytest.raises(UserInputError,
                     match=r"has 2000 pieces, more than the model's "
                     r"vocab_size \(1000\)"):
    finetuning_params.check_vocab_size(small, tokenizer, spm_model)
  # Fewer pieces than vocab_size is allowed (padded vocabularies).
  finetuning_params.check_vocab_size(AlbertConfig(vocab_size=2048),
                                     tokenizer, spm_model)
  # Pretraining: records are checked at start (first record of each file)...
  with pytest.raises(UserInputError,
                     match=r"train.tfrecord: token id \d+ is not below the "
                     r"model's vocab_size=100"):
    pretraining_input.validate_tfrecord_file(
        pretraining_records["path"], SEQ, PREDS, vocab_size=100)


def _pretraining_params(tmp_path, records, config_file, **changes):
  from albert_tf.training.pretraining import driver as lib
  params = lib.PretrainingParams.from_flat(
      input_file=records, output_dir=str(tmp_path / "run"),
      albert_config_file=config_file, train_batch_size=8, eval_batch_size=8,
      max_seq_length=SEQ, max_predictions_per_seq=PREDS, learning_rate=1e-3,
      num_train_steps=5, num_warmup_steps=1, save_checkpoints_steps=5,
      iterations_per_loop=5, seed=1, shuffle_buffer_size=10000)
  return settings_fields.replace(params, **changes)


@pytest.mark.slow
def test_pretraining_out_of_vocabulary_ids_found_while_training(
    tmp_path, pretraining_records):
  # ...and ids past the first record are caught while training.
  import tensorflow as tf

  from albert_tf.training.pretraining import driver as lib
  # A vocabulary that holds the first record's ids but not all the others.
  largest = []
  for record in tf.data.TFRecordDataset(pretraining_records["path"]):
    example = tf.train.Example.FromString(record.numpy())
    largest.append(max(max(example.features.feature[k].int64_list.value)
                       for k in ("input_ids", "masked_lm_ids")))
  vocab_size = largest[0] + 1
  assert max(largest) >= vocab_size
  config_file = str(tmp_path / "small_vocab.json")
  AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64,
               max_position_embeddings=SEQ).to_json_file(config_file)
  with pytest.raises(UserInputError,
                     match=rf"outside the model's vocabulary \(vocab_size="
                     rf"{vocab_size} in .*small_vocab.json\): indices.* is not "
                     rf"in \[0, {vocab_size}\)"):
    lib.run_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file))


def test_truncated_file_past_first_record_names_file_and_flag(
    tmp_path, pretraining_records, config_file):
  from albert_tf.training.pretraining import driver as lib
  with open(pretraining_records["path"], "rb") as f:
    data = f.read()
  truncated = tmp_path / "truncated.tfrecord"
  truncated.write_bytes(data[:len(data) // 2])
  with pytest.raises(UserInputError,
                     match=r"--input_file: .*truncated.tfrecord: .*truncated "
                     r"record.*last checkpoint in --output_dir is intact"):
    lib.run_pretraining(_pretraining_params(tmp_path, str(truncated),
                                            config_file))
  assert latest_step(str(tmp_path / "run")) == 0


def test_bad_tfrecords_name_the_file(tmp_path, pretraining_records):
  from data_pipeline.pretraining import reader as pretraining_input
  records = pretraining_records["path"]
  with pytest.raises(UserInputError,
                     match=r"train.tfrecord: not a pretraining TFRecord file "
                     r"with max_seq_length=64"):
    pretraining_input.validate_tfrecord_file(records, 64, PREDS)
  first = next(iter(tf.data.TFRecordDataset(records))).numpy()
  example = tf.train.Example.FromString(first)
  del example.features.feature["masked_lm_ids"]
  missing = str(tmp_path / "missing_feature.tfrecord")
  with tf.io.TFRecordWriter(missing) as writer:
    writer.write(example.SerializeToString())
  with pytest.raises(UserInputError,
                     match=r"missing_feature.tfrecord: .*masked_lm_ids"):
    pretraining_input.pretraining_dataset(missing, 8, SEQ, PREDS)
  corrupt = tmp_path / "corrupt_first.tfrecord"
  corrupt.write_bytes(first[:10] + b"\x00" * 40)
  with pytest.raises(UserInputError, match="corrupt_first.tfrecord"):
    pretraining_input.pretraining_dataset(str(corrupt), 8, SEQ, PREDS)
  with open(records, "rb") as f:
    data = bytearray(f.read())
  data[len(data) // 2] ^= 0xFF
  deep = tmp_path / "corrupt_inside.tfrecord"
  deep.write_bytes(bytes(data))
  pretraining_input.validate_tfrecord_file(str(deep), SEQ, PREDS)  # 1st ok
  with pytest.raises(UserInputError,
                     match="corrupt_inside.tfrecord: .*corrupted record"):
    pretraining_input.validate_tfrecord_file(str(deep), SEQ, PREDS,
                                             max_records=None)


def test_sequence_length_and_config_errors(tmp_path, pretraining_records,
                                           config_file):
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.pretraining import driver as lib
  with pytest.raises(UserInputError,
                     match=r"--max_seq_length=64 exceeds "
                     r"max_position_embeddings=32 in .*albert_config.json"):
    lib.build_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file,
        max_seq_length=64))
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=str(tmp_path / "ft"), albert_config_file=config_file,
      do_train=True, max_seq_length=64)
  with pytest.raises(UserInputError,
                     match=r"--max_seq_length=64 exceeds "
                     r"max_position_embeddings=32"):
    finetuning_runner.FinetuningRunner(params, None)
  groups = tmp_path / "groups.json"
  with open(config_file) as f:
    groups.write_text(json.dumps(dict(json.load(f), num_hidden_layers=3,
                                      num_hidden_groups=2)))
  with pytest.raises(UserInputError,
                     match=r"groups.json: num_hidden_layers \(3\) must be "
                     r"divisible by num_hidden_groups \(2\)"):
    AlbertConfig.from_json_file(str(groups))
  assert not os.path.exists(tmp_path / "run")
  assert not os.path.exists(tmp_path / "ft")


def _tiny_checkpoint(tmp_path, hidden_size=32):
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = AlbertConfig(vocab_size=2000, embedding_size=16,
                        hidden_size=hidden_size, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=SEQ)
  model = AlbertPretrainer(AlbertEncoder(config))
  prefix = tf.train.Checkpoint(model=model).save(
      str(tmp_path / f"h{hidden_size}" / "ckpt"))
  return config, prefix


def test_checkpoint_of_another_architecture_lists_names_and_shapes(tmp_path):
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.warm_start import warm_start
  _, prefix = _tiny_checkpoint(tmp_path, hidden_size=32)
  config, _ = _tiny_checkpoint(tmp_path, hidden_size=48)
  model = AlbertPretrainer(AlbertEncoder(config))
  with pytest.raises(UserInputError,
                     match=r"does not fit the model:\n  \d+ shape "
                     r"mismatch\(es\):\n(    .*\n)*    .*pooler/kernel.* "
                     r"is \[32, 32\], the model needs \[48, 48\]\n"):
    warm_start(model, prefix)


def test_unwritable_output_dirs(tmp_path, english_corpus, spm_model,
                                pretraining_records, config_file):
  from albert_tf import exports
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.pretraining import driver as lib
  a_file = tmp_path / "a_file"
  a_file.write_text("in the way")
  under = str(a_file / "out")
  with pytest.raises(UserInputError, match=f"--output_dir={under} is not "
                     "writable"):
    lib.build_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file,
        output_dir=under))
  with pytest.raises(UserInputError, match=f"--output_dir={under} is not "
                     "writable"):
    finetuning_runner.FinetuningRunner(finetuning_params.FinetuningParams.from_flat(
        output_dir=under, albert_config_file=config_file, do_train=True,
        max_seq_length=SEQ), None)
  with pytest.raises(UserInputError,
                     match=f"--output_file={under}/x.tfrecord: cannot "
                     "create its directory"):
    _create(english_corpus, under + "/x.tfrecord", spm_model)
  config, prefix = _tiny_checkpoint(tmp_path)
  with pytest.raises(UserInputError,
                     match=f"--export_dir={under}/export is not writable"):
    exports.export_savedmodel(config, prefix, spm_model, under + "/export",
                              seq_length=16)
  assert a_file.read_text() == "in the way"


def test_glue_squad_race_files(tmp_path):
  from data_pipeline.tasks.glue import examples as glue_examples
  from data_pipeline.tasks.race import examples as race_examples
  from data_pipeline.tasks.squad import examples as squad_examples
  glue_dir = tmp_path / "SST-2"
  glue_dir.mkdir()
  (glue_dir / "train.tsv").write_text(
      "sentence\tlabel\ngood\t1\nbad\t0\textra column\n")
  with pytest.raises(UserInputError,
                     match=r"SST-2/train.tsv:3: expected 2 tab-separated "
                     r"columns, found 3"):
    glue_examples.read_examples(glue_examples.get_task("SST-2"),
                                str(glue_dir), "train")

  no_data = tmp_path / "no_data.json"
  no_data.write_text(json.dumps({"version": "1.1"}))
  with pytest.raises(UserInputError, match=r"no_data.json.*'data' list"):
    squad_examples.read_squad_examples(str(no_data), is_training=True)
  outside = tmp_path / "outside.json"
  outside.write_text(json.dumps({"version": "1.1", "data": [{
      "title": "t", "paragraphs": [{
          "context": "The cat sat on the mat.",
          "qas": [{"id": "q7", "question": "Who sat?",
                   "answers": [{"text": "dog", "answer_start": 4}]}]}]}]}))
  with pytest.raises(UserInputError,
                     match=r"outside.json.*question q7.*not in the context"):
    squad_examples.read_squad_examples(str(outside), is_training=True)

  level = tmp_path / "RACE" / "dev" / "high"
  level.mkdir(parents=True)
  (level / "1.txt").write_text(json.dumps(
      {"article": "a", "questions": ["q"], "options": [["a", "b", "c", "d"]]}))
  with pytest.raises(UserInputError, match=r"high/1.txt.*answers"):
    race_examples.read_race_examples(str(tmp_path / "RACE"), "dev")


def test_export_path_that_is_not_a_savedmodel(tmp_path):
  from albert_tf import exports
  (tmp_path / "plain").mkdir()
  for load in (exports.load_saved_model, exports.hub_layer):
    with pytest.raises(UserInputError,
                       match=r"plain is not a SavedModel \(no saved_model.pb"
                       r"\)"):
      load(str(tmp_path / "plain"))
