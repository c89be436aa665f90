"""The raw-text NER pipeline in-graph equals the Python one: words and
their offsets, seqeval's entities, and, around an untrained model (random
tags everywhere), every entity span and score."""

import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.exports.serving import ner_serving
from albert_tf.exports.serving.ner_decoding import EntityDecoder
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning.tasks import ner as ner_finetuning
from data_pipeline.tasks.label_list import LabelList
from data_pipeline.tasks.ner import entity_spans
from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner import word_splitting
from data_pipeline.tokenization import tf_sentencepiece
from data_pipeline.tokenization import tf_wordpiece
from data_pipeline.tokenization.factory import make_tokenizer
from tests.scripts import ner_data

SEQ, STRIDE = 24, 8
# Accents, emoji (with modifiers and variation selectors), CJK, several
# spaces in a row, tabs, no-break and zero-width spaces, lone combining
# marks, punctuation and symbols, empty texts.
TRICKY = ["Héllo  wörld!  Node Karlsson   went to Server Local.",
          "naïve café\tRÉSUMÉ of Codec System", "emoji 😀👍🏽 ok❤️ Frame Heap",
          "北京欢迎你，Beijing！张伟在腾讯公司。", "  lots   of    spaces  ",
          "e\u0301 \u0301x Writer\u00a0Novak zero\u200bwidth",
          "$100 3.14 a-b 'q' (Port) [Mailbox]", "", "   "]


def test_words_in_graph_equal_python():
  words, starts, ends = ner_serving.split_words(tf.constant(TRICKY))
  for i, text in enumerate(TRICKY):
    expected = word_splitting.split_words(text)
    assert [w.decode("utf-8") for w in words[i].numpy()] == [
        w.word for w in expected]
    assert starts[i].numpy().tolist() == [w.start for w in expected]
    assert ends[i].numpy().tolist() == [w.end for w in expected]


@pytest.mark.parametrize("scheme", ["IOB2", "IOB1", "IOBES"])
def test_entity_decoder_equals_seqeval(scheme):
  labels = (["O"] + [f"{p}-{k}" for p in ("BIES" if scheme == "IOBES"
                                          else "BI")
                     for k in ("LOC", "PER", "X-Y")])
  decoder = EntityDecoder(entity_spans.decoding_tables(labels, scheme))
  types = entity_spans.entity_types(labels)
  rng = random.Random(scheme)
  batch = [[rng.randrange(len(labels)) for _ in range(rng.randint(0, 12))]
           for _ in range(300)]
  width = max(map(len, batch)) + 1
  padded = np.full([len(batch), width], len(labels), np.int32)
  for i, tags in enumerate(batch):
    padded[i, :len(tags)] = tags
  rows, firsts, lasts, kinds = (t.numpy() for t in decoder(padded))
  got = [(int(r), types[k], int(f), int(last))
         for r, f, last, k in zip(rows, firsts, lasts, kinds)]
  expected = [(i, kind, first, last) for i, tags in enumerate(batch)
              for kind, first, last in tag_schemes.entities(
                  [labels[t] for t in tags], scheme)]
  assert got == expected
  assert len(expected) > 300


def _texts():
  rng = random.Random(5)
  english = [" ".join(words) for words, _ in
             ner_data.english_sentences(12, seed=9, long_every=2)]
  chinese = [r["text"] for r in ner_data.chinese_records(6, seed=9,
                                                         long_every=2)]
  texts = english + chinese + TRICKY
  rng.shuffle(texts)
  return texts


def _random_model(vocab_size, num_labels):
  """A random model whose weights come from NumPy's seeded generator, not
  from TensorFlow's process-wide random state: the same weights (and so the
  same entities) whatever ran before in this process."""
  config = AlbertConfig(vocab_size=vocab_size, embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=SEQ)
  model = AlbertTokenClassifier(AlbertEncoder(config), num_labels)
  model(dict(input_word_ids=np.zeros([1, SEQ], np.int32),
             input_mask=np.ones([1, SEQ], np.int32),
             input_type_ids=np.zeros([1, SEQ], np.int32)))
  rng = np.random.default_rng(0)
  head = {id(v) for v in model.get_layer("tagger").trainable_variables}
  for variable in model.trainable_variables:
    # LayerNorm scales stay 1; the head's kernel is wide (stddev 1): logits
    # far apart, no near ties between the paths, and every tag predicted.
    if variable.name.endswith("gamma:0"):
      continue
    stddev = 1.0 if id(variable) in head else 0.1
    variable.assign(rng.normal(0.0, stddev, variable.shape).astype(
        variable.dtype.as_numpy_dtype))
  return model


def _predict(model):
  def predict(dataset):
    return {"logits": np.concatenate(
        [model(batch, training=False)["logits"].numpy()
         for batch in dataset])}
  return predict


@pytest.mark.parametrize("vocabulary,scheme", [
    ("sentencepiece", "IOB2"),
    pytest.param("wordpiece", "IOBES", marks=pytest.mark.slow)])
def test_export_pipeline_spans_equal_python(spm_model, chinese_kit, tmp_path,
                                            vocabulary, scheme):
  """Windows (sentences longer than SEQ), max context, tags, entities and
  their scores: the graph's equal the Python path's on the same model."""
  kinds, prefixes = (["LOC", "PER"], "BIES") if scheme == "IOBES" else (
      ["LOC", "PER", "ORG"], "BI")
  labels = LabelList.from_training(
      "token_classification",
      ["O"] + [f"{p}-{k}" for p in prefixes for k in kinds], scheme)
  if vocabulary == "sentencepiece":
    tokenizer = make_tokenizer(spm_model)
    graph_tokenizer = tf_sentencepiece.TFSentencePieceTokenizer.from_file(
        spm_model)
  else:
    corpus = chinese_kit.write_corpus(tmp_path / "corpus.txt")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(chinese_kit.vocab_tokens(corpus)) + "\n")
    tokenizer = make_tokenizer(None, str(vocab))
    graph_tokenizer = tf_wordpiece.TFWordPieceTokenizer.from_file(str(vocab))
  model = _random_model(tokenizer.vocab_size, len(labels.labels))
  serving = ner_serving.NerServing(
      model, graph_tokenizer, (tokenizer.cls_id, tokenizer.sep_id,
                               tokenizer.pad_id, tokenizer.unk_id),
      labels.labels, scheme, SEQ, STRIDE)
  texts = _texts()
  outputs = {k: v.numpy() for k, v in
             tf.function(serving.tag)(tf.constant(texts)).items()}
  expected = ner_finetuning.predict_entities(
      _predict(model), texts, tokenizer, labels, SEQ, STRIDE, batch_size=64)
  found = 0
  for i, text in enumerate(texts):
    got = [dict(label=outputs["entity_label"][i, e].decode(),
                start=int(outputs["entity_start"][i, e]),
                end=int(outputs["entity_end"][i, e]),
                score=float(outputs["entity_score"][i, e]))
           for e in range(outputs["entity_label"].shape[1])
           if outputs["entity_start"][i, e] >= 0]
    assert [(g["label"], g["start"], g["end"]) for g in got] == [
        (e["label"], e["start"], e["end"]) for e in expected[i]], text
    for g, e in zip(got, expected[i]):
      assert text[g["start"]:g["end"]] == e["text"]
      assert g["score"] == pytest.approx(e["score"], abs=1e-5)
    found += len(got)
  padding = outputs["entity_start"] < 0
  assert (outputs["entity_end"][padding] == -1).all()
  assert (outputs["entity_label"][padding] == b"").all()
  # The seeded weights tag every kind: 814 (SentencePiece) and 505
  # (WordPiece) entities compared, in any test order.
  assert found > 400
