"""Tiny exports of every kind tools.predict serves, built once a session
(random weights: the tests compare the tool with the export's own
serving_default, not with labels)."""

import pytest

from tests.built_once import built_once


@pytest.fixture(scope="session")
def prediction_exports(tmp_path_factory, spm_model):
  """{kind: export path}: classifier (one text, length buckets 16,32,64),
  regression (a text pair), multi_label, ner, squad (v1.1),
  multiple_choice (3 choices, buckets 32,64), race (4 options), encoder
  (export_savedmodel's folder); built once a run for all xdist workers
  (tests only read or copy them)."""
  return built_once(tmp_path_factory, "prediction_exports",
                    lambda root: _build_exports(root, spm_model))


def _build_exports(root, spm_model):
  """The exports of `prediction_exports`, in the pathlib.Path `root`."""
  import tensorflow as tf
  import tf_keras

  from albert_tf import exports
  from albert_tf.config import AlbertConfig
  from albert_tf.exports.serving import race as race_export
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
  from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
  from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks.label_list import LabelList
  seq = 64
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=seq,
                        initializer_range=0.2)
  tf_keras.utils.set_random_seed(5)

  def classifier(n):
    return AlbertClassifier(AlbertEncoder(config), n, dropout_rate=0.0)

  paths = {kind: str(root / kind) for kind in
           ("classifier", "regression", "multi_label", "ner", "squad",
            "multiple_choice", "race", "encoder")}
  labels = LabelList("classification", ("billing", "other", "shipping"))
  exports.export_classifier(classifier(3), paths["classifier"], spm_model,
                            list(labels.labels), 1, seq,
                            length_buckets=(16, 32, seq), label_list=labels)
  exports.export_classifier(classifier(1), paths["regression"], spm_model,
                            None, 2, seq,
                            label_list=LabelList("regression"))
  labels = LabelList("multi_label", ("a", "b", "c", "d"), threshold=0.5)
  exports.export_classifier(classifier(4), paths["multi_label"], spm_model,
                            list(labels.labels), 1, seq, label_list=labels)
  tags = LabelList("token_classification",
                   ("B-LOC", "B-PER", "I-LOC", "I-PER", "O"), scheme="IOB2")
  exports.export_ner(
      AlbertTokenClassifier(AlbertEncoder(config), 5, dropout_rate=0.0),
      paths["ner"], tags, seq, 16, spm_model_file=spm_model)
  exports.export_squad(AlbertSpanLabeler(AlbertEncoder(config)),
                       paths["squad"], spm_model, seq, doc_stride=16,
                       max_query_length=12, n_best_size=5,
                       max_answer_length=10, beam=False, version_2=False)
  race_export.export_multiple_choice(
      AlbertMultipleChoice(AlbertEncoder(config), 3, dropout_rate=0.0),
      paths["multiple_choice"], spm_model, seq, max_qa_length=20,
      num_choices=3, length_buckets=(32, seq))
  race_export.export_race(
      AlbertMultipleChoice(AlbertEncoder(config), 4, dropout_rate=0.0),
      paths["race"], spm_model, seq, max_qa_length=20)
  encoder = AlbertEncoder(config)
  prefix = tf.train.Checkpoint(encoder=encoder).write(
      str(root / "checkpoint" / "ckpt"))
  exports.export_savedmodel(config, prefix, spm_model, paths["encoder"],
                            seq_length=seq)
  return paths
