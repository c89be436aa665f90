"""keras-hub presets: ours -> preset -> keras_hub.models.Albert* and back.

The keras-hub (Keras 3) half runs in a subprocess
(tests/scripts/keras3_script.py); this process builds the checkpoint and our
reference outputs with tf_keras.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
from tests.scripts.keras3_script import run_keras3

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

SEQ = 16
# Lines the stdlib corpus lacks: case, accents, whitespace runs, quotes,
# numbers with commas, compatibility characters.
EXTRA_LINES = [
    "Héllo  WÖRLD, ``quoted'' text\tand\u00a0more",
    "ÀÉÎÕÜ ñ ç ß İstanbul, naïve café",
    "1,000, 2,500,000 and 3,14; 12, 13,",
    "ﬁne ½ ㍱ e\u0301 Ｆｕｌｌｗｉｄｔｈ",
]
POSITIVE, NEGATIVE = ("true", "yes", "valid"), ("false", "no", "invalid")
FILLERS = ("value", "result", "object", "string", "list", "file", "module",
           "number", "class", "method")


def _task(fillers):
  texts, labels = [], []
  for i, filler in enumerate(fillers):
    for label, options in ((1, POSITIVE), (0, NEGATIVE)):
      texts.append(f"the {filler} is {options[i % 3]}")
      labels.append(label)
  return texts, labels


# Every normalisation rule SentencePiece's trainer offers (its default,
# nmt_nfkc, is what released models and `spm_train` without flags have), and
# a custom TSV rule (code points in hex: "A" -> "a", "½" -> "1/2").
RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity", "custom")
CUSTOM_RULE_TSV = "41\t61\nBD\t31 2F 32\n"


def _rule_models(folder, corpus):
  """{rule: .model path}: a 1000-piece SentencePiece model of `corpus` with
  ALBERT's control pieces, trained with each normalisation rule."""
  import sentencepiece as spm
  folder.mkdir()
  models = {}
  for rule in RULES:
    prefix = str(folder / rule)
    options = dict(normalization_rule_name=rule)
    if rule == "custom":
      tsv = folder / "rule.tsv"
      tsv.write_text(CUSTOM_RULE_TSV)
      options = dict(normalization_rule_tsv=str(tsv))
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=1000,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"], pad_id=0,
        unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>",
        unk_piece="<unk>", minloglevel=2, **options)
    models[rule] = prefix + ".model"
  return models


@pytest.fixture(scope="module")
def preset_results(tmp_path_factory, spm_model, english_corpus):
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=4, num_hidden_groups=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=32, hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1,
                        initializer_range=0.1)
  pretrainer = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in pretrainer.weights:  # nothing trivially 0 or 1
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  root = tmp_path_factory.mktemp("keras_hub")
  checkpoint = str(root / "ckpt" / "ckpt")
  tf.train.Checkpoint(model=pretrainer).write(checkpoint)
  encoder_checkpoint = str(root / "encoder_ckpt" / "ckpt")
  tf.train.Checkpoint(encoder=pretrainer.encoder).write(encoder_checkpoint)
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)

  ids = rng.integers(5, config.vocab_size, size=(3, SEQ)).astype(np.int32)
  mask = np.ones((3, SEQ), np.int32)
  mask[1, SEQ // 2:] = 0
  types = np.zeros((3, SEQ), np.int32)
  types[:, SEQ // 3:] = 1
  positions = np.array([[1, 4, 7], [2, 3, 5], [0, 9, 15]], np.int32)
  inputs = dict(input_word_ids=ids * mask, input_mask=mask,
                input_type_ids=types * mask)
  outputs = pretrainer(dict(inputs, masked_lm_positions=positions),
                       training=False)
  encoded = pretrainer.encoder(inputs, training=False)
  expected = str(root / "expected.npz")
  np.savez(expected, **inputs, masked_lm_positions=positions,
           sequence_output=encoded["sequence_output"].numpy(),
           pooled_output=encoded["pooled_output"].numpy(),
           mlm_logits=outputs["mlm_logits"].numpy())

  with open(english_corpus, encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if line.strip()] + EXTRA_LINES
  corpus_lines = str(root / "lines.json")
  with open(corpus_lines, "w", encoding="utf-8") as f:
    json.dump(lines, f)
  train_texts, train_labels = _task(FILLERS[:7] * 4)
  dev_texts, dev_labels = _task(FILLERS[7:] * 2)
  settings = dict(
      config_file=config_file, checkpoint=checkpoint,
      encoder_checkpoint=encoder_checkpoint, spm_model=spm_model,
      preset=str(root / "preset"), expected=expected,
      corpus_lines=corpus_lines, back_prefix=str(root / "back" / "ckpt"),
      preset_encoder_only=str(root / "preset_encoder"),
      encoder_back=str(root / "encoder_back" / "ckpt"),
      preset_again=str(root / "preset_again"),
      tokenizer_export=str(root / "tokenizer_export"),
      preset_stock=str(root / "preset_stock"),
      rule_models=_rule_models(root / "rule_models", english_corpus),
      rule_presets=str(root / "rule_presets"),
      train_texts=train_texts, train_labels=train_labels,
      dev_texts=dev_texts, dev_labels=dev_labels, epochs=20)
  result = run_keras3("keras_hub_preset", settings, root)
  return dict(result=result, lines=lines, spm_model=spm_model, root=root,
              config=config, checkpoint=checkpoint,
              rule_models=settings["rule_models"])


def test_backbone_equals_our_encoder_with_two_groups(preset_results):
  result = preset_results["result"]
  assert result["num_groups"] == 2
  assert result["sequence_diff"] < 1e-5, result
  assert result["pooled_diff"] < 1e-5, result


def test_masked_lm_uses_our_head(preset_results):
  result = preset_results["result"]
  assert result["mlm_has_preprocessor"]
  # keras-hub's head LayerNorm has epsilon 1e-5 (ours 1e-12).
  assert result["mlm_logits_diff"] < 1e-3, result["mlm_logits_diff"]


@pytest.mark.parametrize("path", ["eager_ids", "graph_ids",
                                  "saved_model_ids"])
def test_tokenizer_ids_equal_ours(preset_results, path):
  """keras-hub's tokenizer from the preset (our OfficialAlbertTokenizer)
  gives our Python tokenizer's ids on every line, eagerly, in tf.data and
  from a reloaded SavedModel."""
  result, lines = preset_results["result"], preset_results["lines"]
  ours = tokenization.SentencePieceTokenizer(preset_results["spm_model"])
  expected = ours.encode_batch(lines)
  assert len(lines) > 3000 and len(result[path]) == len(lines)
  differing = [line for line, ids, want in zip(lines, result[path], expected)
               if ids != want]
  assert differing == []


def test_tokenizer_pieces_equal_ours(preset_results):
  """dtype="string" gives our pieces, eagerly and in a tf.function (an
  unknown character as the piece "<unk>", as the in-graph tokenizer)."""
  result = preset_results["result"]
  ours = tokenization.SentencePieceTokenizer(preset_results["spm_model"])
  expected = [ours.convert_ids_to_tokens(ours.encode(line))
              for line in result["pieces_sample"]]
  assert len(expected) >= 40
  assert result["eager_pieces"] == expected
  assert result["graph_pieces"] == expected


def test_corpus_has_what_the_stock_tokenizer_misses(preset_results):
  """The lines keras-hub's own AlbertTokenizer would get wrong are there:
  the digit-comma re-split, and exact Viterbi ties ("w" "ww" vs "ww" "w")
  that tensorflow_text.SentencepieceTokenizer (keras-hub's tf.data path)
  breaks differently from the sentencepiece package."""
  import tensorflow_text as tf_text
  lines = preset_results["lines"]
  ours = tokenization.SentencePieceTokenizer(preset_results["spm_model"])
  texts = [ours.preprocess(line) for line in lines]
  plain = ours.sp_model.Encode(texts)
  resplit = sum(tokenization.encode_pieces(ours.sp_model, text) !=
                ours.sp_model.IdToPiece(ids)
                for text, ids in zip(texts, plain))
  with open(preset_results["spm_model"], "rb") as f:
    stock_tf = tf_text.SentencepieceTokenizer(f.read())
  ties = [a != b for a, b in zip(stock_tf.tokenize(texts).to_list(), plain)]
  assert resplit >= 10, resplit
  assert sum(ties) >= 2, sum(ties)


def test_presets_name_our_tokenizer(preset_results):
  result = preset_results["result"]
  assert result["tokenizer_class"] == "OfficialAlbertTokenizer"
  assert result["classifier_tokenizer_class"] == "OfficialAlbertTokenizer"
  assert result["mlm_tokenizer_class"] == "OfficialAlbertTokenizer"
  assert result["keras3_package_without_tf_keras"]  # Keras 3 only
  # Without `import albert_tf.keras3`, Keras says which class and module.
  error = result["unregistered_error"]
  assert "Could not locate class 'OfficialAlbertTokenizer'" in error, error
  assert "albert_tf.keras3.official_albert_tokenizer" in error, error


def test_text_classifier_learns_from_raw_strings(preset_results):
  result = preset_results["result"]
  assert result["dev_accuracy"] > 0.9, result
  assert result["train_loss"][-1] < result["train_loss"][0]


def test_preset_to_ours_to_preset_is_exact(preset_results):
  result = preset_results["result"]
  assert result["back_config_equal"]
  assert result["round_trip_num_arrays"] > 40
  assert result["round_trip_differing"] == []
  assert "sentence_order head left out" in result["write"]
  assert result["ram_round_trip_equal"]
  assert result["ram_leftovers"] == []


def test_checkpoint_readers_take_a_preset(preset_results):
  result = preset_results["result"]
  assert result["load_weights_into_format"] == "keras_hub"
  assert result["load_weights_into_diff"] == 0.0


def test_reading_another_architecture_lists_every_problem(preset_results):
  error = preset_results["result"]["strict_error"]
  assert error is not None
  assert "match no model variable" in error  # group_1 has no place
  assert "shape mismatch" in error  # intermediate size


@pytest.mark.parametrize("change, message", [
    (dict(share_parameters="attention"), "share_parameters='attention'"),
    (dict(hidden_act="relu"), "hidden_act='relu'"),
])
def test_inexpressible_config_is_one_error(preset_results, change, message):
  config = AlbertConfig.from_dict(dict(preset_results["config"].to_dict(),
                                       **change))
  with pytest.raises(UserInputError, match=message):
    converter.convert_checkpoint(
        config, preset_results["checkpoint"],
        str(preset_results["root"] / "never"), "keras_hub",
        spm_model_file=preset_results["spm_model"])
  assert not os.path.exists(preset_results["root"] / "never")


def test_keras_hub_output_needs_the_spm_model(preset_results, tmp_path):
  with pytest.raises(UserInputError, match="--spm_model_file"):
    converter.convert_checkpoint(
        preset_results["config"], preset_results["checkpoint"],
        str(tmp_path / "p"), "keras_hub")


def _differing(ids_per_line, expected):
  return [i for i, (ids, want) in enumerate(zip(ids_per_line, expected))
          if ids != want]


@pytest.mark.parametrize("rule", RULES)
def test_every_normalisation_rule_converts_exactly(preset_results, rule):
  """A model trained with any SentencePiece normalisation rule converts:
  the preset's official tokenizer gives our ids on every line (eagerly and
  in tf.data), the stock one wherever the digit-comma rule does not apply,
  and the backbone equals our encoder."""
  result = preset_results["result"]["rules"][rule]
  lines = preset_results["lines"]
  model = preset_results["rule_models"][rule]
  ours = tokenization.SentencePieceTokenizer(model).encode_batch(lines)
  assert len(result["official_eager_ids"]) == len(lines) > 3000
  assert _differing(result["official_eager_ids"], ours) == []
  assert _differing(result["official_graph_ids"], ours) == []
  stock = _differing(result["stock_eager_ids"], ours)
  assert all(any(f"{d}," in lines[i] for d in "0123456789") for i in stock)
  assert result["sequence_diff"] < 1e-5


def test_custom_rule_is_applied(preset_results):
  model = preset_results["rule_models"]["custom"]
  ours = tokenization.SentencePieceTokenizer(model, do_lower_case=False,
                                             keep_accents=True)
  assert ours.tokenize("A½ And") == ours.tokenize("a1/2 and")


def test_default_preset_uses_the_stock_tokenizer(preset_results):
  """The default preset names keras-hub's AlbertTokenizer; its ids differ
  from ours on the lines the conversion's output line says (digit-comma
  lines; and Viterbi ties on the TensorFlow paths)."""
  result, lines = preset_results["result"], preset_results["lines"]
  assert result["stock_tokenizer_class"] == "AlbertTokenizer"
  assert "keras-hub's AlbertTokenizer" in result["write_stock"]
  assert "OfficialAlbertTokenizer" in result["write"]
  ours = tokenization.SentencePieceTokenizer(
      preset_results["spm_model"]).encode_batch(lines)
  eager = _differing(result["stock"]["eager_ids"], ours)
  graph = _differing(result["stock"]["graph_ids"], ours)
  corpus = len(lines) - len(EXTRA_LINES)
  assert corpus == 3536
  comma = [i for i in eager if any(f"{d}," in lines[i] for d in "0123456789")]
  assert eager == comma
  in_corpus = [i for i in eager if i < corpus]
  assert len(in_corpus) == 8, in_corpus
  assert len([i for i in graph if i < corpus and i not in eager]) == 6
  assert "on 8 of 3536 lines" in result["write_stock"]
  assert "6 more" in result["write_stock"]


WITHOUT_ALBERT_TF = r"""
import importlib.abc, json, sys
class Refuse(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in ("albert_tf", "data_pipeline", "tools"):
      raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Refuse())
import keras, keras_hub, tensorflow as tf
preset, out_path, data = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
keras.utils.set_random_seed(1)
classifier = keras_hub.models.AlbertTextClassifier.from_preset(
    preset, num_classes=2)
train = tf.data.Dataset.from_tensor_slices(
    (data["train_texts"], data["train_labels"])).shuffle(64, seed=0).batch(16)
steps = data["epochs"] * int(train.cardinality())
classifier.compile(
    optimizer=keras.optimizers.Adam(
        keras.optimizers.schedules.CosineDecay(3e-3, steps)),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"])
history = classifier.fit(train, epochs=data["epochs"], verbose=0)
dev = tf.data.Dataset.from_tensor_slices(
    (data["dev_texts"], data["dev_labels"])).batch(16)
try:
  import albert_tf  # noqa: F401
  importable = True
except ImportError:
  importable = False
json.dump(dict(
    loss=[float(x) for x in history.history["loss"]],
    dev_accuracy=float(classifier.evaluate(dev, verbose=0,
                                           return_dict=True)["accuracy"]),
    tokenizer=type(classifier.preprocessor.tokenizer).__name__,
    albert_tf_importable=importable), open(out_path, "w"))
"""


def test_default_preset_fits_without_albert_tf(preset_results, tmp_path):
  """The default preset loads and fine-tunes on raw strings in a process
  where albert_tf cannot be imported (python -I from an empty folder)."""
  import subprocess
  import sys
  train_texts, train_labels = _task(FILLERS[:7] * 4)
  dev_texts, dev_labels = _task(FILLERS[7:] * 2)
  data = dict(train_texts=train_texts, train_labels=train_labels,
              dev_texts=dev_texts, dev_labels=dev_labels, epochs=20)
  out = tmp_path / "out.json"
  process = subprocess.run(
      [sys.executable, "-I", "-c", WITHOUT_ALBERT_TF,
       preset_results["result"]["stock_preset_dir"], str(out),
       json.dumps(data)], cwd=str(tmp_path), capture_output=True, text=True,
      timeout=900, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert process.returncode == 0, process.stderr[-3000:]
  result = json.loads(out.read_text())
  assert result["albert_tf_importable"] is False
  assert result["tokenizer"] == "AlbertTokenizer"
  assert result["loss"][-1] < result["loss"][0]
  assert result["dev_accuracy"] > 0.9, result
