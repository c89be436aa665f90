"""The raw-text classifier, RACE and SQuAD exports with length buckets: a
request runs at the smallest bucket that holds it, with the full-length
outputs (1e-5)."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.exports.bucketing import cut_to_bucket
from albert_tf.exports.serving import classifier as classifier_export
from albert_tf.exports.serving import race as race_export
from albert_tf.exports.serving import squad_export
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tasks.race import features as race_features
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

SEQ = 64


def test_cut_to_smallest_bucket_holding_the_longest_example():
  def inputs(lengths, shape=()):
    mask = (np.arange(SEQ) < np.array(lengths)[:, None]).astype(np.int32)
    mask = mask.reshape((len(lengths),) + shape + (SEQ,))
    return {"input_word_ids": mask * 7, "input_mask": mask,
            "input_type_ids": np.zeros_like(mask)}

  for lengths, width in (([5, 12], 16), ([16], 16), ([17, 3], 32),
                         ([33], SEQ), ([SEQ], SEQ)):
    cut = cut_to_bucket(inputs(lengths), (16, 32, SEQ))
    assert {tuple(v.shape) for v in cut.values()} == {(len(lengths), width)}
    np.testing.assert_array_equal(cut["input_mask"],
                                  inputs(lengths)["input_mask"][:, :width])
  # Multiple choice [batch, choices, seq]: the longest choice decides.
  choices = {k: v.reshape(2, 2, SEQ)
             for k, v in inputs([3, 20, 5, 9]).items()}
  assert cut_to_bucket(choices, (16, 32, SEQ))["input_mask"].shape == (
      2, 2, 32)
  assert cut_to_bucket(inputs([5]), (SEQ,))["input_mask"].shape == (1, SEQ)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("serving")
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=SEQ,
                        initializer_range=0.2)
  tf.keras.utils.set_random_seed(3)
  model = AlbertClassifier(AlbertEncoder(config), num_classes=3)
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  paths = {}
  for name, buckets in (("bucketed", (32, SEQ)), ("full", ())):
    paths[name] = classifier_export.export_classifier(
        model, str(root / name), spm_model, ["a", "b", "c"], 2, SEQ,
        length_buckets=buckets)
  tf.keras.utils.set_random_seed(0)
  return dict(model=model, tokenizer=tokenizer, paths=paths)


def _python_logits(exported, pairs):
  task = glue_examples.get_task("MNLI")
  features = glue_features.featurize(
      task, [glue_examples.Example(str(i), a, b)
             for i, (a, b) in enumerate(pairs)],
      exported["tokenizer"], SEQ)
  inputs = features.padded(SEQ, exported["tokenizer"].pad_id)
  return features.lengths, exported["model"](inputs)["logits"].numpy()


@pytest.mark.slow
@pytest.mark.parametrize("pairs", [
    [("A short one.", "Yes.")],
    [("A short one.", "Yes."), ("word " * 30, "another " * 20),
     ("middle sized sentence here", "and its pair")]])
def test_served_outputs_equal_full_length(exported, pairs):
  lengths, expected = _python_logits(exported, pairs)
  got = {}
  for name, path in exported["paths"].items():
    serving = exports.load_saved_model(path).signatures["serving_default"]
    got[name] = serving(text_a=tf.constant([a for a, _ in pairs]),
                        text_b=tf.constant([b for _, b in pairs]))
    np.testing.assert_allclose(got[name]["logits"], expected, atol=1e-5)
  np.testing.assert_allclose(got["bucketed"]["probabilities"],
                             got["full"]["probabilities"], atol=1e-5)
  assert (got["bucketed"]["labels"].numpy() ==
          got["full"]["labels"].numpy()).all()
  if len(pairs) == 1:
    assert lengths.max() <= 32  # served at bucket 32
  else:
    assert lengths.max() > 32


RACE_SEQ = 48


@pytest.mark.slow
def test_race_served_short_input_equals_full_length(tmp_path, spm_model):
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64,
                        max_position_embeddings=RACE_SEQ,
                        initializer_range=0.2)
  tf.keras.utils.set_random_seed(5)
  model = AlbertMultipleChoice(AlbertEncoder(config), num_choices=4)
  tf.keras.utils.set_random_seed(0)
  examples = [
      race_examples.RaceExample("short-0", "middle", "A cat sat.", "Who sat?",
                                ["a cat", "a dog", "nobody", "a bird"], 0),
      race_examples.RaceExample("long-0", "high", "word " * 40,
                                "the text says _ .",
                                ["word", "other", "none", "many words"], 0)]
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  arrays = race_features.convert_examples_to_arrays(examples, tokenizer,
                                                    RACE_SEQ, 16)
  lengths = arrays["input_mask"].sum(-1).max(-1)
  assert lengths[0] <= 32 < lengths[1]
  inputs = {k: arrays[k] for k in ("input_word_ids", "input_mask",
                                   "input_type_ids")}
  expected = model(inputs)["logits"].numpy()
  for name, buckets in (("bucketed", (32, RACE_SEQ)), ("full", ())):
    path = race_export.export_race(model, str(tmp_path / name), spm_model,
                                   RACE_SEQ, 16, length_buckets=buckets)
    serving = exports.load_saved_model(path).signatures["serving_default"]
    for rows in ([0], [0, 1]):  # batch 1 at bucket 32; a mixed batch at 48
      out = serving(article=tf.constant([examples[i].article for i in rows]),
                    question=tf.constant([examples[i].question
                                          for i in rows]),
                    options=tf.constant([examples[i].options for i in rows]))
      np.testing.assert_allclose(out["logits"], expected[rows], atol=1e-5)


@pytest.mark.slow
def test_squad_served_short_input_equals_full_length(tmp_path, spm_model):
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=SEQ,
                        initializer_range=0.2)
  tf.keras.utils.set_random_seed(7)
  model = AlbertSpanLabeler(AlbertEncoder(config))
  tf.keras.utils.set_random_seed(0)
  questions = ["who sat?", "which word follows the marker?"]
  contexts = ["A cat sat on the mat.",
              " ".join(["the quick brown fox jumps over the lazy dog"] * 8)]
  outputs = {}
  for name, buckets in (("bucketed", (32, SEQ)), ("full", ())):
    path = squad_export.export_squad(
        model, str(tmp_path / name), spm_model, SEQ, doc_stride=16,
        max_query_length=12, n_best_size=5, max_answer_length=8,
        beam=False, version_2=True, length_buckets=buckets)
    serving = exports.load_saved_model(path).signatures["serving_default"]
    outputs[name] = [serving(question=tf.constant(questions[i:i + 1]),
                             context=tf.constant(contexts[i:i + 1]))
                     for i in range(2)]  # the short one runs at bucket 32
  for bucketed, full in zip(outputs["bucketed"], outputs["full"]):
    assert bucketed["best_answer"].numpy() == full["best_answer"].numpy()
    assert bucketed["start"].numpy() == full["start"].numpy()
    for key in ("score", "null_odds"):
      np.testing.assert_allclose(bucketed[key], full[key], atol=1e-5)


@pytest.mark.slow
def test_preprocessor_serves_at_smallest_bucket(tmp_path, spm_model):
  """The encoder export's raw-text endpoints bucket; the encoder's outputs
  at the real positions equal the full-length ones; calling the
  preprocessor and bert_pack_inputs keep the fixed length."""
  seq = 32
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=seq,
                        initializer_range=0.2)
  tf.keras.utils.set_random_seed(11)
  encoder = AlbertEncoder(config)
  tf.keras.utils.set_random_seed(0)
  checkpoint = str(tmp_path / "ckpt" / "ckpt")
  tf.train.Checkpoint(encoder=encoder).write(checkpoint)
  export_dir = str(tmp_path / "export")
  exports.export_savedmodel(config, checkpoint, spm_model, export_dir,
                            seq_length=seq, length_buckets=(16,))
  preprocessor = exports.load_saved_model(export_dir + "/preprocessor")
  encoder = exports.load_saved_model(export_dir + "/encoder")
  short, long = tf.constant(["A cat."]), tf.constant(["word " * 20])
  for text, width in ((short, 16), (long, seq)):
    full = preprocessor(text)  # TF Hub's call: always seq_length
    assert full["input_word_ids"].shape == (1, seq)
    for served in (preprocessor.signatures["serving_default"](sentences=text),
                   preprocessor.serve(text), preprocessor.call_inference(text)):
      assert {tuple(v.shape) for v in served.values()} == {(1, width)}
      for key, value in served.items():
        np.testing.assert_array_equal(value, full[key][:, :width])
    n = int(tf.reduce_sum(full["input_mask"]))
    expected = encoder(full)
    got = encoder(dict(served))
    np.testing.assert_allclose(got["sequence_output"][:, :n],
                               expected["sequence_output"][:, :n], atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"],
                               atol=1e-5)
  # Pairs: the signature and the endpoint bucket, bert_pack_inputs does not.
  tokens = [preprocessor.tokenize(short), preprocessor.tokenize(short)]
  packed = preprocessor.bert_pack_inputs(tokens, seq_length=seq)
  assert packed["input_word_ids"].shape == (1, seq)
  assert int(tf.reduce_sum(packed["input_mask"])) <= 16
  for pair in (preprocessor.signatures["two_segments"](text_a=short,
                                                       text_b=short),
               preprocessor.two_segments({"text_a": short, "text_b": short})):
    assert {tuple(v.shape) for v in pair.values()} == {(1, 16)}
    for key, value in pair.items():
      np.testing.assert_array_equal(value, packed[key][:, :16])
  assert preprocessor.bert_pack_inputs(
      tokens, seq_length=24)["input_word_ids"].shape == (1, 24)


def test_export_length_buckets_are_checked():
  from albert_common.errors import UserInputError
  from albert_tf.exports import options
  assert options.export_length_buckets((), 128) == (128,)
  assert options.export_length_buckets("auto", 128) == (32, 64, 128)
  assert options.export_length_buckets((16, 32), 64) == (16, 32, 64)
  with pytest.raises(UserInputError, match="exceeds --seq_length=64"):
    options.export_length_buckets((32, 96), 64)
  with pytest.raises(UserInputError, match="strictly increasing"):
    options.export_length_buckets("32,16", 64)
