"""run_squad with a WordPiece vocabulary: pieces mapped to the characters of
the paragraph, and a Chinese SQuAD-format task learned."""

import dataclasses
import json
import os
import random

import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.finetuning.tasks import squad as squad_finetuning
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import features as squad_features
from data_pipeline.tokenization import wordpiece_tokenizer as wp

ANSWERS = ["北京", "上海", "长城", "香蕉", "图书馆", "医生", "足球", "电影"]
QUESTION = "答案是什么？"


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_pieces_map_to_their_characters(multilingual_lines, wordpiece_kit,
                                        do_lower_case):
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(do_lower_case))
  tokenizer = wp.WordPieceTokenizer(None, do_lower_case=do_lower_case,
                                    tokens=tokens)
  checked = exact = 0
  for text in multilingual_lines + ["  Ça  va,\u00a0e\u0301t\u200bé 中国 "]:
    para = squad_features.tokenize_paragraph(tokenizer, text)
    assert para.ids == tokenizer.encode(text), repr(text)
    assert len(para.orig_to_tok_index) == len(text)
    for t, piece in enumerate(para.pieces):
      start, end = para.tok_start_to_orig_index[t], (
          para.tok_end_to_orig_index[t])
      if t == 0 or para.tok_end_to_orig_index[t - 1] < start:
        assert para.orig_to_tok_index[start] == t  # Else a shared char.
      if piece != "[UNK]":
        surface = "".join(wp.basic_tokenize(text[start:end + 1],
                                            do_lower_case))
        # A Hangul syllable is several jamo after NFD: a piece may hold
        # part of one character, whose range is then the whole character.
        assert piece.removeprefix("##") in surface, (text, piece)
        exact += surface == piece.removeprefix("##")
        checked += 1
  assert checked > 300 and exact > 0.9 * checked


def _squad_json(sentence, n, seed):
  rng = random.Random(seed)
  articles = []
  for i in range(n):
    before, after = sentence(rng), sentence(rng)
    answer = rng.choice(ANSWERS)
    context = f"{before}答案是{answer}。{after}"
    articles.append({"title": f"t{i}", "paragraphs": [{
        "context": context,
        "qas": [{"id": f"q{i}", "question": QUESTION, "answers": [
            {"text": answer, "answer_start": len(before) + 3}]}]}]})
  return {"version": "1.1", "data": articles}


@pytest.fixture(scope="module")
def zh_squad(tmp_path_factory, chinese_kit):
  root = tmp_path_factory.mktemp("zh_squad")
  files = {}
  for split, n, seed in (("train", 400, 0), ("dev", 60, 1)):
    path = root / f"{split}.json"
    path.write_text(json.dumps(_squad_json(chinese_kit.sentence, n, seed),
                               ensure_ascii=False), encoding="utf-8")
    files[split] = str(path)
  corpus = root / "text.txt"
  corpus.write_text("\n".join(
      [p["context"] for f in files.values()
       for a in json.loads(open(f, encoding="utf-8").read())["data"]
       for p in a["paragraphs"]] + [QUESTION]) + "\n", encoding="utf-8")
  tokens = chinese_kit.vocab_tokens(str(corpus))
  vocab_file = root / "vocab_chinese.txt"
  vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  config = root / "albert_config.json"
  AlbertConfig(vocab_size=len(tokens), embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64,
               hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0).to_json_file(str(config))
  params = FinetuningParams.from_flat(
      output_dir=str(root / "out"), vocab_file=str(vocab_file),
      albert_config_file=str(config), do_train=True, do_eval=True,
      max_seq_length=64, train_batch_size=32, eval_batch_size=64,
      learning_rate=1e-3, train_step=300, warmup_step=30,
      save_checkpoints_steps=300, iterations_per_loop=50, seed=1)
  options = squad_finetuning.SquadOptions(
      train_file=files["train"], predict_file=files["dev"],
      version_2_with_negative=False, doc_stride=32, max_query_length=16,
      n_best_size=5, max_answer_length=8)
  return dict(params=params, options=options)


@pytest.mark.slow
def test_chinese_squad_learns_and_exports(zh_squad, tmp_path):
  export_dir = str(tmp_path / "export")
  results = squad_finetuning.run_squad(
      zh_squad["params"],
      dataclasses.replace(zh_squad["options"], export_dir=export_dir))
  # Chance (one of 8 answers, at any position) is far below.
  assert results["exact_match"] > 40.0, results
  with open(os.path.join(zh_squad["params"].runtime.output_dir,
                         "predictions.json"), encoding="utf-8") as f:
    predictions = json.load(f)
  assert len(predictions) == 60
  assert sum(p in ANSWERS for p in predictions.values()) > 30
  # The raw-text export (WordPiece in-graph) answers as predictions.json.
  examples = squad_examples.read_squad_examples(
      zh_squad["options"].predict_file, is_training=False)
  contexts = [e.paragraph_text for e in examples] + [
      "  Ça  va,\u00a0e\u0301t\u200bé 中国 答案是长城。"]
  questions = [e.question_text for e in examples] + [QUESTION]
  serving = exports.load_saved_model(export_dir)
  assert serving.vocab_file.asset_path.numpy().decode().endswith(
      "vocab_chinese.txt")
  out = serving.signatures["serving_default"](
      question=tf.constant(questions), context=tf.constant(contexts))
  answers = [a.decode() for a in out["answer"].numpy()]
  assert answers[:-1] == [predictions[e.qas_id] for e in examples]
  for text, answer, start, end in zip(contexts, answers,
                                      out["start"].numpy(),
                                      out["end"].numpy()):
    if answer:
      assert text[start:end] == answer


@pytest.mark.parametrize("do_lower_case", [
    pytest.param(True, marks=pytest.mark.slow), False])  # one in make test
def test_in_graph_offsets_equal_python(multilingual_lines, wordpiece_kit,
                                       do_lower_case):
  from albert_tf.exports.serving.squad_serving_wordpiece import (
    WordPieceSquadServing,
  )
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(do_lower_case))
  tokenizer = wp.WordPieceTokenizer(None, do_lower_case=do_lower_case,
                                    tokens=tokens)
  serving = WordPieceSquadServing(None, tokens, 64, 32, 16, 5, 8, False,
                                  False, do_lower_case=do_lower_case)
  paragraph = tf.function(serving._paragraph)  # pylint: disable=protected-access
  texts = multilingual_lines + ["  Ça  va,\u00a0e\u0301t\u200bé 中国 ", ""]
  for text in texts:
    ids, start, end, _ = paragraph(tf.constant(text))
    para = squad_features.tokenize_paragraph(tokenizer, text)
    assert ids.numpy().tolist() == para.ids, repr(text)
    assert start.numpy().tolist() == para.tok_start_to_orig_index, repr(text)
    assert end.numpy().tolist() == para.tok_end_to_orig_index, repr(text)
