"""An extended model (tools.extend_vocabulary: 60 clinical pieces appended
to the stdlib SentencePiece model of a tiny random pretrainer) fine-tunes
and exports like any model of ours: SavedModel, LiteRT, ONNX, the official
TF1 layout and keras-hub presets carry the extended vocabulary, and each
gives our ids (and our outputs) on held-out clinical text that uses the new
pieces. Its output folder may be on ram:// (any TensorFlow filesystem).

The extended folder and its SavedModel export are built once (module
fixture); the Hugging Face export's AutoTokenizer is checked in
tests/albert_tf/training/pretraining/test_extend_vocabulary.py.
"""

import os
import uuid

import numpy as np
import pytest
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining import vocabulary_extension as vext
from data_pipeline.tokenization import sentencepiece_tokenizer as spt
from tests.albert_tf.training.pretraining import domain_text
from tests.scripts.keras3_script import run_keras3

# N: 29 characters the old model reads as <unk> (they come first), then
# 31 ranked pieces (domain words).
V, N, SEQ = 2000, 60, 32
OUTPUTS = ("pooled_output", "sequence_output")


def _params(prefix, config_file, spm_model, domain, output_dir,
            new_pieces=N):
  return vext.VocabularyExtensionParams.from_flat(
      init_checkpoint=prefix, albert_config_file=config_file,
      spm_model_file=spm_model, input_file=domain, new_pieces=new_pieces,
      output_dir=output_dir)


@pytest.fixture(scope="module")
def extended(tmp_path_factory, spm_model):
  """The extended folder, its tokenizer, its encoder in memory, its
  SavedModel export and held-out clinical lines (English and Chinese)."""
  root = tmp_path_factory.mktemp("extended_exports")
  config = AlbertConfig(vocab_size=V, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=SEQ)
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:  # nothing trivially 0 or 1
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  prefix = tf.train.Checkpoint(model=model).write(str(root / "source" /
                                                      "ckpt"))
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)
  domain = domain_text.write_corpus(str(root / "domain.txt"),
                                    domain_text.clinical_sentences(300))
  out = str(root / "extended")
  vext.extend_vocabulary(_params(prefix, config_file, spm_model, domain, out))
  new_config = AlbertConfig.from_json_file(os.path.join(
      out, "albert_config.json"))
  spm = os.path.join(out, os.path.basename(spm_model))
  encoder = AlbertEncoder(new_config)
  converter.load_weights_into(encoder, out)
  export_dir = str(root / "export")
  exports.export_savedmodel(new_config, out, spm, export_dir,
                            seq_length=SEQ)
  lines = domain_text.clinical_sentences(12, held_out=True)
  tokenizer = spt.SentencePieceTokenizer(spm)
  return dict(root=root, out=out, config=new_config, spm=spm,
              tokenizer=tokenizer, encoder=encoder, export_dir=export_dir,
              lines=lines, ids=[tokenizer.encode(s) for s in lines],
              source=dict(prefix=prefix, config_file=config_file,
                          spm=spm_model, domain=domain))


def test_held_out_lines_use_the_new_pieces(extended):
  """The premise of the tests below: the lines need the new ids."""
  assert extended["config"].vocab_size == V + N
  assert any(not s.isascii() for s in extended["lines"])
  new = [max(ids) >= V for ids in extended["ids"]]
  assert sum(new) >= len(new) - 1, list(zip(extended["lines"], new))


def _packed(extended, ids):
  """[CLS] ids [SEP], padded to SEQ: int32 [1, SEQ] each input."""
  tokenizer = extended["tokenizer"]
  tokens = [tokenizer.cls_id] + ids[:SEQ - 2] + [tokenizer.sep_id]
  pad = SEQ - len(tokens)
  return dict(
      input_word_ids=np.array([tokens + [tokenizer.pad_id] * pad], np.int32),
      input_mask=np.array([[1] * len(tokens) + [0] * pad], np.int32),
      input_type_ids=np.zeros((1, SEQ), np.int32))


def _assert_our_outputs(extended, inputs, outputs, atol):
  expected = extended["encoder"](inputs, training=False)
  for name in OUTPUTS:
    np.testing.assert_allclose(np.asarray(outputs[name]),
                               expected[name].numpy(), atol=atol,
                               err_msg=name)


def test_savedmodel_preprocessor_and_encoder(extended):
  """Raw text in: the preprocessor's ids are our tokenizer's (new pieces
  included); the encoder's outputs on them are the extended model's."""
  folder = extended["export_dir"]
  for part in ("encoder", "preprocessor"):
    with open(os.path.join(folder, part, "assets",
                           os.path.basename(extended["spm"])), "rb") as f:
      assert f.read() == file_io.read_bytes(extended["spm"]), part
  preprocessor = exports.load_saved_model(os.path.join(folder,
                                                       "preprocessor"))
  encoder = exports.load_saved_model(os.path.join(folder, "encoder"))
  lines = tf.constant(extended["lines"])
  tokens = preprocessor.tokenize(lines).to_list()
  assert tokens == extended["ids"]
  packed = {k: v.numpy() for k, v in preprocessor(lines).items()}
  for i, ids in enumerate(extended["ids"]):
    row = {k: v[i:i + 1] for k, v in packed.items()}
    assert {k: v.tolist() for k, v in row.items()} == {
        k: v.tolist() for k, v in _packed(extended, ids).items()}
  _assert_our_outputs(extended, packed, encoder(packed, training=False),
                      atol=1e-5)


def _runner_checks(extended, runner, folder, description):
  """The vocabulary beside the converted file is the extended one, and the
  reference runner tokenizes with it and gets our outputs."""
  assert description["vocab_file"] == os.path.basename(extended["spm"])
  with open(os.path.join(folder, description["vocab_file"]), "rb") as f:
    assert f.read() == file_io.read_bytes(extended["spm"])
  assert runner.tokenizer.vocab_size == V + N
  for line, ids in zip(extended["lines"], extended["ids"]):
    assert runner.tokenizer.encode(line) == ids, line
    inputs = runner.classify_inputs([line])
    assert {k: v.tolist() for k, v in inputs.items()} == {
        k: v.tolist() for k, v in _packed(extended, ids).items()}
    _assert_our_outputs(extended, inputs, runner.model(inputs), atol=1e-4)


def test_litert_file_and_its_vocabulary(extended):
  from albert_tf.exports.litert.report import export_and_report
  from albert_tf.exports.litert.runner import TextRunner
  folder = str(extended["root"] / "litert")
  tflite = os.path.join(folder, "encoder.tflite")
  result = export_and_report(os.path.join(extended["export_dir"], "encoder"),
                             tflite, seq_length=SEQ, length_buckets="none")
  assert result["max_difference"] < 1e-4, result["lines"]
  _runner_checks(extended, TextRunner.from_file(tflite), folder,
                 result["description"])


def test_onnx_file_and_its_vocabulary(extended):
  from albert_tf.exports.onnx.report import export_and_report
  from albert_tf.exports.onnx.runtime import OnnxModel
  from albert_tf.exports.text_runner import TextRunner
  folder = str(extended["root"] / "onnx")
  onnx = os.path.join(folder, "encoder.onnx")
  result = export_and_report(os.path.join(extended["export_dir"], "encoder"),
                             onnx, verify_seq_length=SEQ)
  assert result["max_difference"] < 1e-4, result["lines"]
  runner = TextRunner(OnnxModel(file_io.read_bytes(onnx)),
                      result["description"], folder, seq_length=SEQ)
  _runner_checks(extended, runner, folder, result["description"])


def test_official_tf1_conversion_carries_the_rows_and_the_model(extended):
  """The TF1 layout: [V+N, E] word embeddings and a [V+N] MLM bias equal to
  the extended model's, and the extended SentencePiece model beside it."""
  folder = extended["root"] / "official"
  prefix = str(folder / "model.ckpt")
  converter.convert_checkpoint(extended["config"], extended["out"], prefix,
                               "official", spm_model_file=extended["spm"])
  written = [n for n in os.listdir(folder) if n.endswith(".model")]
  assert len(written) == 1, os.listdir(folder)
  assert (folder / written[0]).read_bytes() == file_io.read_bytes(
      extended["spm"])
  shapes = dict(tf.train.list_variables(prefix))
  assert shapes["bert/embeddings/word_embeddings"] == [V + N, 16]
  assert shapes["cls/predictions/output_bias"] == [V + N]
  ours = converter.read_weights(extended["out"], extended["config"]).arrays
  back = converter.read_weights(prefix, extended["config"]).arrays
  for name in (vext.EMBEDDINGS, vext.OUTPUT_BIAS):
    np.testing.assert_array_equal(back[name], ours[name], err_msg=name)


def test_keras_hub_presets_tokenize_as_we_do(extended):
  """Keras 3 in a subprocess: the preset with our tokenizer gives our ids
  on every line; keras-hub's stock AlbertTokenizer on the English lines
  (its normalisation differs from the official one elsewhere); the
  backbone's table has V + N rows."""
  result = run_keras3("extended_vocabulary_preset", dict(
      config_file=os.path.join(extended["out"], "albert_config.json"),
      checkpoint=extended["out"], spm_model=extended["spm"],
      root=str(extended["root"]), lines=extended["lines"]),
      extended["root"])
  assert result["embedding_rows"] == V + N
  assert result["official_vocabulary_size"] == V + N
  assert result["stock_vocabulary_size"] == V + N
  assert result["official_ids"] == extended["ids"]
  for line, got, ids in zip(extended["lines"], result["stock_ids"],
                            extended["ids"]):
    if line.isascii():
      assert got == ids, line


def test_fine_tunes_from_the_extended_folder(extended, tmp_path):
  """Own-data classification with --init_checkpoint=the folder, its
  albert_config.json and its tokenizer: two steps train from the grown
  table (a shape mismatch would fail the load) and the dev set is
  evaluated."""
  from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
  from albert_tf.training.finetuning.tasks import own_data
  from tests.albert_tf.training.finetuning import own_data_kit as kit
  rows = [{"id": f"r{i}", "text": s,
           "label": "cardiac" if "cardi" in s else "other"}
          for i, s in enumerate(domain_text.clinical_sentences(64))]
  columns = ("id", "text", "label")
  train = kit.write_csv(tmp_path / "train.csv", rows[:48], columns)
  dev = kit.write_csv(tmp_path / "dev.csv", rows[48:], columns)
  out = tmp_path / "run"
  result = own_data.run_own_data(
      kit.run_settings(out, os.path.join(extended["out"],
                                         "albert_config.json"),
                       extended["spm"], init_checkpoint=extended["out"],
                       train_step=2, warmup_step=1, train_batch_size=8,
                       eval_batch_size=16, save_checkpoints_steps=2,
                       iterations_per_loop=2, log_steps=1),
      OwnDataOptions.from_flat(train_file=train, dev_file=dev))
  assert 0.0 <= result["eval"]["accuracy"] <= 1.0, result
  trained = converter.read_weights(str(out), extended["config"]).arrays
  start = converter.read_weights(extended["out"], extended["config"]).arrays
  table = trained[vext.EMBEDDINGS]
  assert table.shape == (V + N, 16)
  # Two small steps from the extended table (not from a fresh one), and
  # the rows of new pieces in the training text moved.
  np.testing.assert_allclose(table, start[vext.EMBEDDINGS], atol=1e-2)
  used = sorted({i for r in rows[:48]
                 for i in extended["tokenizer"].encode(r["text"]) if i >= V})
  assert used
  assert np.abs(table[used] - start[vext.EMBEDDINGS][used]).max() > 1e-6


def test_output_on_ram_one_level_deep(extended):
  """--output_dir=ram://<bucket>/out, the bucket empty: written whole; then
  the same folder again, and a bad request elsewhere in the bucket, are one
  error each and add nothing."""
  source = extended["source"]
  bucket = f"ram://extend-{uuid.uuid4().hex[:8]}"
  out = f"{bucket}/out"
  report = vext.extend_vocabulary(_params(
      source["prefix"], source["config_file"], source["spm"],
      source["domain"], out))
  assert file_io.listdir(bucket) == ["out"]
  assert sorted(file_io.listdir(out)) == sorted(os.listdir(extended["out"]))
  assert report["vocab_size"] == V + N
  assert AlbertConfig.from_json_file(
      f"{out}/albert_config.json").vocab_size == V + N
  for name in (os.path.basename(extended["spm"]), vext.REPORT_NAME):
    assert file_io.read_bytes(f"{out}/{name}") == file_io.read_bytes(
        os.path.join(extended["out"], name)), name
  grown = converter.read_weights(out, extended["config"]).arrays
  np.testing.assert_array_equal(
      grown[vext.EMBEDDINGS], converter.read_weights(
          extended["out"], extended["config"]).arrays[vext.EMBEDDINGS])
  with pytest.raises(UserInputError, match=f"--output_dir={out} exists"):
    vext.extend_vocabulary(_params(source["prefix"], source["config_file"],
                                   source["spm"], source["domain"], out))
  with pytest.raises(UserInputError, match="--new_pieces=3000 is more than"):
    vext.extend_vocabulary(_params(
        source["prefix"], source["config_file"], source["spm"],
        source["domain"], f"{bucket}/too_many", new_pieces=3000))
  assert file_io.listdir(bucket) == ["out"]
