"""The demo's own pieces: the held-out split and the chance baselines; the
demo with a WordPiece vocabulary."""

import collections
import json

import pytest
import tensorflow as tf

from data_pipeline.pretraining import tfrecord_schema
from tools.support import pipeline_demo


def test_split_corpus_by_document(english_corpus, tmp_path):
  train, heldout = str(tmp_path / "train.txt"), str(tmp_path / "heldout.txt")
  counts = pipeline_demo.split_corpus(english_corpus, train, heldout,
                                      heldout_fraction=0.1, seed=3)
  with open(english_corpus, encoding="utf-8") as f:
    documents = [d for d in f.read().split("\n\n") if d.strip()]

  def read(path):
    with open(path, encoding="utf-8") as f:
      return collections.Counter(
          d.strip() for d in f.read().split("\n\n") if d.strip())

  train_docs, heldout_docs = read(train), read(heldout)
  assert counts == (len(documents) - len(documents) // 10,
                    len(documents) // 10)
  # Every document lands on exactly one side (the stdlib repeats some
  # docstrings, so compare multisets).
  assert train_docs + heldout_docs == collections.Counter(
      d.strip() for d in documents)
  assert sum(heldout_docs.values()) == len(documents) // 10


def test_heldout_baselines_match_a_direct_count(pretraining_records):
  path = pretraining_records["path"]
  baselines = pipeline_demo.heldout_baselines(path, 32, 5)
  spec = tfrecord_schema.name_to_features(32, 5)
  tokens, labels = collections.Counter(), collections.Counter()
  for record in tf.data.TFRecordDataset(path):
    example = tf.io.parse_single_example(record, spec)
    weights = example["masked_lm_weights"].numpy()
    tokens.update(example["masked_lm_ids"].numpy()[weights > 0].tolist())
    labels.update(example["next_sentence_labels"].numpy().tolist())
  assert baselines["mlm"] == tokens.most_common(1)[0][1] / sum(
      tokens.values())
  assert baselines["sop"] == labels.most_common(1)[0][1] / sum(
      labels.values())
  assert 0.4 < baselines["sop"] < 0.6 and 0 < baselines["mlm"] < 0.2


@pytest.mark.slow
def test_demo_runs_with_a_wordpiece_vocabulary(tmp_path, capsys,
                                               english_corpus, monkeypatch):
  """`tools.demo --tokenizer=wordpiece`: every stage takes the vocab.txt it
  learns, the exported preprocessor tokenizes with it in-graph, and the
  fine-tuning command the summary suggests runs as printed (its main, in
  this process, in the folder it is printed for). The corpus stage finds
  its split of the 300 KB test corpus cached (a rerun's path; building the
  1.3 MB one and learning a vocabulary on it took 40% of the test's CPU)."""
  from albert_tf.config import AlbertConfig
  from data_pipeline.tokenization.wordpiece_tokenizer import WordPieceTokenizer
  from tests.albert_tf.training.finetuning import own_data_kit
  (tmp_path / "demo" / "corpus").mkdir(parents=True)
  pipeline_demo.split_corpus(
      english_corpus, str(tmp_path / "demo" / "corpus" / "train.txt"),
      str(tmp_path / "demo" / "corpus" / "heldout.txt"))
  settings = pipeline_demo.DemoSettings(
      output_dir=str(tmp_path / "demo"), vocab_size=2000, max_seq_length=32,
      max_predictions_per_seq=5, dupe_factor=1, train_batch_size=16,
      num_train_steps=50, save_checkpoints_steps=50, tokenizer="wordpiece",
      model=AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                         num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=32))
  metrics = pipeline_demo.run_demo(settings)
  with open(tmp_path / "demo" / "pretraining" / "eval_results.json") as f:
    saved = json.load(f)
  assert metrics["mlm_accuracy"] == pytest.approx(saved["mlm_accuracy"])
  assert metrics["sop_accuracy"] == pytest.approx(saved["sop_accuracy"])
  assert metrics["sop_baseline"] == pytest.approx(
      pipeline_demo.heldout_baselines(
          str(tmp_path / "demo" / "data" / "heldout.tfrecord"), 32, 5)["sop"])
  printed = capsys.readouterr().out
  assert "[1/6] English corpus" in printed and "cached in" in printed
  command = printed.split("next: ")[1].split("\n", 2)[2].split("=" * 72)[0]
  command = command.replace("\\\n", " ").split()
  assert command[:3] == ["python", "-m", "tools.run_classifier"]
  work = tmp_path / "mine"
  work.mkdir()
  for name, n in (("train.csv", 48), ("dev.csv", 16)):
    rows = [f"{'good' if i % 2 else 'bad'} attribute value {i},"
            f"{'yes' if i % 2 else 'no'}" for i in range(n)]
    (work / name).write_text("text,label\n" + "\n".join(rows) + "\n")
  monkeypatch.chdir(work)
  assert own_data_kit.run_tool(
      command[2].split(".")[1], *command[3:], "--train_step=4",
      "--warmup_step=1", "--save_checkpoints_steps=4") == 0
  with open(work / "runs" / "mine" / "eval_results.json") as f:
    assert json.load(f)["step"] == 4
  vocab = str(tmp_path / "demo" / "vocab" / "vocab.txt")
  tokens = open(vocab, encoding="utf-8").read().split("\n")[:-1]
  assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert not (tmp_path / "demo" / "spm").exists()  # no empty folder
  preprocessor = tf.saved_model.load(
      str(tmp_path / "demo" / "savedmodel" / "preprocessor"))
  text = "Return the value of the named attribute, e.g. 3.5 times."
  ids = preprocessor.tokenize(tf.constant([text])).flat_values.numpy()
  assert ids.tolist() == WordPieceTokenizer(vocab).encode(text)
