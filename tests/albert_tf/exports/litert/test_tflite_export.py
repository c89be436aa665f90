"""tools.export_tflite: every export's token-ids signature as a LiteRT file,
run by ai_edge_litert's plain interpreter (built-in kernels only)."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.exports import token_ids
from albert_tf.exports.litert import converter as tflite
from albert_tf.exports.litert.interpreter import LiteRTModel
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

SEQ = 32
LABELS = ["neg", "neu", "pos"]


def _config(**kwargs):
  values = dict(vocab_size=2000, embedding_size=16, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=48,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                initializer_range=0.1)
  values.update(kwargs)
  return AlbertConfig(**values)


def _randomize(model, seed):
  rng = np.random.default_rng(seed)
  for v in model.weights:  # layer norms too, so nothing is trivially 0/1
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))


@pytest.fixture(scope="module")
def glue_export(tmp_path_factory, spm_model):
  """A GLUE (pair) export with random weights and its config asset."""
  root = tmp_path_factory.mktemp("tflite_glue")
  config_file = str(root / "albert_config.json")
  _config().to_json_file(config_file)
  classifier = AlbertClassifier(AlbertEncoder(_config()), len(LABELS))
  _randomize(classifier, 1)
  return exports.export_classifier(
      classifier, str(root / "glue"), spm_model, LABELS, 2, SEQ,
      albert_config_file=config_file)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, spm_model, glue_export):
  """The encoder, GLUE, SQuAD (v1.1 and v2.0 beam) and RACE exports of one
  tiny config with random weights, built once."""
  root = tmp_path_factory.mktemp("tflite")
  config = _config()
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)
  dirs = {"classifier": glue_export}

  pretrainer = AlbertPretrainer(AlbertEncoder(config))
  _randomize(pretrainer, 0)
  checkpoint = str(root / "ckpt" / "ckpt")
  tf.train.Checkpoint(model=pretrainer).write(checkpoint)
  exports.export_savedmodel(config, checkpoint, spm_model,
                            str(root / "encoder_export"), seq_length=SEQ)
  dirs["encoder"] = str(root / "encoder_export" / "encoder")

  span = AlbertSpanLabeler(AlbertEncoder(config))
  _randomize(span, 2)
  dirs["squad"] = exports.export_squad(
      span, str(root / "squad"), spm_model, SEQ, doc_stride=8,
      max_query_length=8, n_best_size=5, max_answer_length=6, beam=False,
      version_2=False, albert_config_file=config_file)

  beam = AlbertSquadV2(AlbertEncoder(config), start_n_top=3, end_n_top=3)
  _randomize(beam, 3)
  dirs["squad_beam"] = exports.export_squad(
      beam, str(root / "squad_v2"), spm_model, SEQ, doc_stride=8,
      max_query_length=8, n_best_size=5, max_answer_length=6, beam=True,
      version_2=True, albert_config_file=config_file)

  race = AlbertMultipleChoice(AlbertEncoder(config))
  _randomize(race, 4)
  dirs["race"] = exports.export_race(race, str(root / "race"), spm_model,
                                     SEQ, max_qa_length=10,
                                     albert_config_file=config_file)
  return dict(root=root, dirs=dirs, config=config, spm_model=spm_model)


def _sentences(english_corpus, n, seed=0):
  with open(english_corpus, encoding="utf-8") as f:
    lines = [line.strip() for line in f if len(line.split()) > 3]
  rng = np.random.default_rng(seed)
  return [lines[i] for i in rng.choice(len(lines), n, replace=False)]


def _real_inputs(spm_model, english_corpus, n, seq=SEQ, seed=0):
  """Packed `[CLS] a [SEP] b [SEP]` of real sentences, truncated pairs."""
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  text = _sentences(english_corpus, 2 * n, seed)
  ids = np.full((n, seq), tokenizer.pad_id, np.int32)
  types = np.zeros((n, seq), np.int32)
  mask = np.zeros((n, seq), np.int32)
  for i in range(n):
    a, b = tokenizer.encode(text[2 * i]), tokenizer.encode(text[2 * i + 1])
    a, b = a[:seq // 2 - 2], b[:seq // 2 - 1 - (i % 5)]
    row = [tokenizer.cls_id] + a + [tokenizer.sep_id] + b + [tokenizer.sep_id]
    ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
    types[i, len(a) + 2:len(row)] = 1
  return dict(input_word_ids=ids, input_mask=mask, input_type_ids=types)


def _inputs_for(kind, spm_model, english_corpus, n, seq=SEQ):
  inputs = _real_inputs(spm_model, english_corpus, n * (4 if kind == "race"
                                                        else 1), seq)
  if kind == "race":
    inputs = {k: v.reshape(n, 4, seq) for k, v in inputs.items()}
  if kind == "squad_beam":
    # Questions are segment a: no answer there, nor in the padding.
    inputs["p_mask"] = ((inputs["input_type_ids"] == 0) |
                        (inputs["input_mask"] == 0)).astype(np.int32)
    inputs["p_mask"][:, 0] = 0
  return inputs


def _saved_model_outputs(saved_model, inputs, names):
  loaded, function = token_ids.token_ids_function(saved_model)
  out = function(**{k: tf.constant(v) for k, v in inputs.items()})
  return {k: out[k].numpy() for k in names}


@pytest.fixture(scope="module")
def float_files(exported):
  """{kind: (.tflite path, export_tflite's description)}: each export
  converted once (float32, batch 2), each in a folder of its own."""
  files = {}
  for kind, saved_model in exported["dirs"].items():
    folder = exported["root"] / "float" / kind
    folder.mkdir(parents=True)
    output = str(folder / f"{kind}.tflite")
    files[kind] = output, tflite.export_tflite(saved_model, output,
                                               seq_length=SEQ, batch_size=2)
  return files


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["encoder", "classifier", "squad",
                                  "squad_beam", "race"])
def test_float_model_equals_saved_model(kind, exported, float_files,
                                        english_corpus):
  output, described = float_files[kind]
  folder = os.path.dirname(output)
  expected_outputs = {
      "encoder": ["pooled_output", "sequence_output"],
      "classifier": ["logits", "probabilities"],
      "squad": ["end_logits", "start_logits"],
      "squad_beam": ["cls_logits", "end_top_index", "end_top_log_probs",
                     "start_top_index", "start_top_log_probs"],
      "race": ["logits", "probabilities"]}[kind]
  assert described["kind"] == kind
  assert described["outputs"] == expected_outputs
  with open(output, "rb") as f:
    model = LiteRTModel(f.read())
  # The plain interpreter (built-in kernels only) allocated it: no Flex op.
  assert not [op for op in model.op_names() if "Flex" in op]
  shape = (2, 4, SEQ) if kind == "race" else (2, SEQ)
  assert set(model.input_shapes.values()) == {shape}
  inputs = _inputs_for(kind, exported["spm_model"], english_corpus, 5)
  got = model(inputs)
  want = _saved_model_outputs(exported["dirs"][kind], inputs, got)
  assert sorted(got) == expected_outputs
  for name in got:
    assert got[name].shape == want[name].shape
    if "index" in name:
      np.testing.assert_array_equal(got[name], want[name])
    else:
      np.testing.assert_allclose(got[name], want[name], atol=1e-4, rtol=0)
  # The vocabulary, labels and a description travel with the file.
  beside = sorted(os.listdir(folder))
  assert os.path.basename(exported["spm_model"]) in beside
  assert ("labels.txt" in beside) == (kind == "classifier")
  with open(os.path.join(folder, f"{kind}.json")) as f:
    assert json.load(f)["vocab_file"] == os.path.basename(
        exported["spm_model"])


def test_not_our_export_is_one_line(tmp_path):
  with pytest.raises(UserInputError, match=r"not a SavedModel"):
    tflite.export_tflite(str(tmp_path), str(tmp_path / "m.tflite"))

  class Plain(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(self, x):
      return {"y": x * 2}

  plain = Plain()
  tf.saved_model.save(plain, str(tmp_path / "plain"),
                      signatures={"serving_default": plain.f})
  with pytest.raises(UserInputError, match=r"no token-ids signature"):
    tflite.export_tflite(str(tmp_path / "plain"), str(tmp_path / "m.tflite"),
                         seq_length=16)
  assert not os.path.exists(tmp_path / "m.tflite")


def test_seq_length_above_positions_is_one_line(glue_export, tmp_path):
  with pytest.raises(UserInputError,
                     match=r"--seq_length=49 .*max_position_embeddings \(48"):
    tflite.export_tflite(glue_export,
                         str(tmp_path / "m.tflite"), seq_length=49)


def test_unwritable_output_is_one_line(glue_export, tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  with pytest.raises(UserInputError, match=r"--output_file=.* cannot be "
                     r"written"):
    tflite.export_tflite(glue_export, str(blocker / "m.tflite"),
                         seq_length=SEQ)
  with pytest.raises(UserInputError, match=r"--output_file=.* is a folder"):
    tflite.export_tflite(glue_export, str(tmp_path), seq_length=SEQ)
  with pytest.raises(UserInputError, match=r"--quantize=int4 must be one of"):
    tflite.export_tflite(glue_export, str(tmp_path / "m.tflite"),
                         quantize="int4")
  assert sorted(os.listdir(tmp_path)) == ["a_file"]


@pytest.mark.slow
def test_output_on_any_filesystem(glue_export):
  out = "ram://tflite_test/out/classifier.tflite"
  tflite.export_tflite(glue_export, out, seq_length=SEQ)
  with tf.io.gfile.GFile(out, "rb") as f:
    model = LiteRTModel(f.read())
  assert model.input_shapes["input_word_ids"] == (1, SEQ)
  assert tf.io.gfile.exists("ram://tflite_test/out/labels.txt")
  assert not [n for n in tf.io.gfile.listdir("ram://tflite_test/out")
              if ".tmp-" in n]


def test_op_without_builtin_kernel_is_one_line():
  @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32)])
  def f(x):
    return {"y": tf.math.igamma(x, x + 1.0)}

  with pytest.raises(UserInputError) as raised:
    tflite.convert(f.get_concrete_function(), None, "none")
  assert str(raised.value) == (
      "op tf.Igamma has no LiteRT built-in kernel; Flex (select TF) ops are "
      "not used, so this model cannot be converted")


@pytest.mark.slow
def test_race_runner_and_eval_data(exported, float_files, english_corpus,
                                   tmp_path):
  from albert_tf.exports.litert import report as tflite_report
  from albert_tf.exports.litert.runner import TextRunner
  from data_pipeline.tasks.race import examples as race_examples
  sentences = _sentences(english_corpus, 40, seed=3)
  folder = tmp_path / "race" / "dev" / "middle"
  folder.mkdir(parents=True)
  for i in range(4):
    options = [" ".join(s.split()[:4]) for s in sentences[8 * i:8 * i + 4]]
    record = {"id": f"{i}.txt", "article": " ".join(sentences[8 * i + 4:
                                                              8 * i + 8]),
              "questions": ["which is said?", "it says _ here."],
              "options": [options, options[::-1]], "answers": ["A", "C"]}
    (folder / f"{i}.txt").write_text(json.dumps(record))
  out = str(tmp_path / "out" / "race.tflite")
  result = tflite_report.export_and_report(
      exported["dirs"]["race"], out, seq_length=SEQ, batch_size=2,
      quantize="dynamic_int8", eval_data=str(tmp_path / "race"))
  examples = race_examples.read_race_examples(str(tmp_path / "race"), "dev")
  float_file = float_files["race"][0]
  # The runner packs as the raw-text SavedModel (max_qa_length 10 there).
  letters = TextRunner.from_file(float_file).choose(
      [e.article for e in examples], [e.question for e in examples],
      [e.options for e in examples], max_qa_length=10)
  serving = exports.load_saved_model(exported["dirs"]["race"]).signatures[
      "serving_default"]
  want = serving(article=tf.constant([e.article for e in examples]),
                 question=tf.constant([e.question for e in examples]),
                 options=tf.constant([e.options for e in examples]))
  # Random weights: options' logits differ by ~1e-5; compare where the
  # SavedModel's choice is clear of float noise.
  top2 = np.sort(want["logits"].numpy(), -1)[:, -2:]
  clear = (top2[:, 1] - top2[:, 0]) > 2e-6
  assert clear.sum() >= 4
  assert [x for x, c in zip(letters, clear) if c] == [
      a.decode() for a, c in zip(want["answer"].numpy(), clear) if c]
  assert result["max_difference"] <= 1e-4
  assert set(result["metrics"]) == {"none", "dynamic_int8"}
  # --eval_data packs with max_qa_length 128 (the run_race default): its
  # accuracy is the float model's argmax at that packing against the gold
  # letters (A and C of each file), counted here by hand.
  runner = TextRunner.from_file(float_file)
  chosen = np.argmax(runner.model(runner.race_inputs(examples))["logits"], -1)
  gold = [{"A": 0, "C": 2}[a] for _ in range(4) for a in ("A", "C")]
  assert [e.label for e in examples] == gold
  want_accuracy = float(np.mean(chosen == np.array(gold)))
  assert result["metrics"]["none"]["accuracy"] == pytest.approx(
      want_accuracy, abs=1e-9)


def test_a_preprocessor_or_export_folder_names_the_encoder(exported):
  root = exported["root"] / "encoder_export"
  encoder = str(root / "encoder")
  for given in (str(root / "preprocessor"), str(root)):
    with pytest.raises(UserInputError, match=(
        rf"--saved_model={given} is .*; pass {encoder}$")):
      tflite.export_tflite(given, str(exported["root"] / "p.tflite"),
                           seq_length=SEQ)
  assert not os.path.exists(exported["root"] / "p.tflite")


def test_eval_data_that_does_not_fit_leaves_nothing(exported, tmp_path):
  from albert_tf.exports.litert import report
  out = tmp_path / "out" / "m.tflite"
  with pytest.raises(UserInputError,
                     match=r"--eval_data=.*nowhere does not exist"):
    report.export_and_report(exported["dirs"]["classifier"], str(out),
                             seq_length=SEQ,
                             eval_data=str(tmp_path / "nowhere"))
  assert not out.parent.exists()
  # Found only once the model is known: a GLUE model needs --task_name.
  with pytest.raises(UserInputError, match="needs --task_name"):
    report.export_and_report(exported["dirs"]["classifier"], str(out),
                             seq_length=SEQ, eval_data=str(tmp_path))
  assert os.listdir(out.parent) == []


def test_squad_files_post_process_with_the_runs_settings(exported,
                                                         float_files,
                                                         tmp_path):
  """The export records its fine-tuning values; the runner beside a
  converted file takes them (the v2.0 threshold included) unless given."""
  from albert_tf.exports.litert.runner import SquadSettings
  from albert_tf.exports.litert.runner import TextRunner
  with open(os.path.join(exported["dirs"]["squad_beam"], "assets",
                         "squad_settings.json")) as f:
    assert json.load(f) == {"doc_stride": 8, "max_query_length": 8,
                            "n_best_size": 5, "max_answer_length": 6,
                            "null_score_diff_threshold": 0.0}
  out = float_files["squad_beam"][0]
  assert TextRunner.from_file(out).squad_settings == SquadSettings(8, 8, 5, 6,
                                                                   0.0)
  given = TextRunner.from_file(out, squad_settings=SquadSettings(
      doc_stride=4, null_score_diff_threshold=-1.5)).squad_settings
  assert given == SquadSettings(4, 8, 5, 6, -1.5)
  # A copy of the v1.1 file's folder: the shared one keeps its settings.
  shutil.copytree(os.path.dirname(float_files["squad"][0]), tmp_path / "v1")
  v1 = str(tmp_path / "v1" / "squad.tflite")
  assert TextRunner.from_file(v1).squad_settings == SquadSettings(8, 8, 5, 6,
                                                                  None)
  # Without the file (an older export): the official defaults.
  os.remove(tmp_path / "v1" / "squad_settings.json")
  assert TextRunner.from_file(v1).squad_settings == SquadSettings(
      128, 64, 20, 30, None)
