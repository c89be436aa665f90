"""run_ner end to end on crafted tasks: an English one in CoNLL-2003's
layout (IOB1, SentencePiece) and a Chinese one in CLUENER's (IOBES,
WordPiece, on ram://, the stand-in for gs://). Both learn to dev F1 >= 0.9
on tiny configs; sentences longer than --max_seq_length are windowed; the
reported F1 is seqeval's on the written predictions; every word gets one
tag; the export's entity spans are the Python predictions'."""

import json
import os

import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOBES

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf import saved_model_inspection as inspection
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.ner_settings import NerOptions
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.finetuning.params import prepare
from albert_tf.training.finetuning.tasks import ner as ner_finetuning
from data_pipeline.tasks import label_list
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import tag_schemes
from tests.scripts import ner_data

SEQ = 32
# Accents, emoji, CJK, several spaces in a row, around known entities.
TRICKY = ["Héllo  wörld!  Node Karlsson   met Clïent Stack in Server Local.",
          "émoji 😀👍🏽  Codec System   and Frame Heap ❤️ Port",
          "北京  Writer Novak\tvisited   Mailbox 😀 with Iterator Module",
          "", "   "]
CHINESE_TRICKY = ["张伟  在腾讯公司😀工作。",
                  "记者采访了 京东集团 的负责人李娜 🇨🇳",
                  "Ｆｕｌｌ王芳昨天去了南京市，café。"]


def _config(path, vocab_size, hidden_size=32):
  AlbertConfig(vocab_size=vocab_size, embedding_size=16,
               hidden_size=hidden_size, num_hidden_layers=2,
               num_attention_heads=4, intermediate_size=2 * hidden_size,
               max_position_embeddings=64,
               hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0).to_json_file(str(path))
  return str(path)


def _params(output_dir, **kwargs):
  values = dict(output_dir=output_dir, do_train=True, do_eval=True,
                do_predict=True, max_seq_length=SEQ, train_batch_size=32,
                eval_batch_size=64, learning_rate=2e-3, train_step=200,
                warmup_step=20, save_checkpoints_steps=100,
                iterations_per_loop=50, length_buckets="16,32", seed=1)
  values.update(kwargs)
  return FinetuningParams.from_flat(**values)


@pytest.fixture(scope="module")
def english(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("ner_english")
  train = ner_data.write_conll(root / "train.txt",
                               ner_data.english_sentences(500, 0), iob1=True)
  dev = ner_data.write_conll(root / "dev.txt",
                             ner_data.english_sentences(100, 1), iob1=True)
  # Unlabeled: one column, the words.
  test_sentences = ner_data.english_sentences(40, 2)
  with open(root / "test.txt", "w", encoding="utf-8") as f:
    f.write("\n\n".join("\n".join(words) for words, _ in test_sentences))
  params = _params(str(root / "out"), spm_model_file=spm_model,
                   albert_config_file=_config(root / "config.json", 2000))
  options = NerOptions(train_file=train, dev_file=dev,
                       test_file=str(root / "test.txt"), doc_stride=16,
                       export_dir=str(root / "export"))
  results = ner_finetuning.run_ner(params, options)
  return dict(root=root, params=params, options=options, results=results,
              test_sentences=test_sentences)


@pytest.mark.slow  # a whole NER run; make test's are test_ner_runs.py's
def test_english_conll_learns(english):
  results, out = english["results"], english["params"].runtime.output_dir
  print({k: round(v, 4) for k, v in results.items() if "_" not in k})
  assert results["f1"] >= 0.9 and results["accuracy"] >= 0.95
  assert results["step"] in (100, 200)
  assert {"precision", "recall", "f1", "accuracy", "PER_f1", "LOC_f1",
          "ORG_f1", "PER_number"} <= set(results)
  with open(os.path.join(out, "eval_results.json")) as f:
    assert json.load(f) == results
  labels = label_list.read(out)
  assert labels.scheme == "IOB1" and labels.labels == (
      "I-LOC", "I-ORG", "I-PER", "O")
  for name in ("best", "train", "eval"):
    assert os.path.isdir(os.path.join(out, name)), name


@pytest.mark.slow  # a whole NER run; make test's are test_ner_runs.py's
def test_reported_f1_is_seqevals_on_the_predictions_file(english):
  options, out = english["options"], english["params"].runtime.output_dir
  gold = ner_files.read_ner_file(options.dev_file)
  written = ner_files.read_ner_file(os.path.join(out, "dev_predictions.txt"),
                                    scheme="IOB1")
  # Every word, long sentences included, has one tag, in the same lines.
  assert [s.words for s in written.sentences] == [
      s.words for s in gold.sentences]
  assert written.layout == gold.layout
  assert max(len(s.words) for s in gold.sentences) > SEQ
  f1 = f1_score([s.tags for s in gold.sentences],
                [s.tags for s in written.sentences])
  assert english["results"]["f1"] == pytest.approx(f1, abs=1e-12)


@pytest.mark.slow  # a whole NER run; make test's are test_ner_runs.py's
def test_unlabeled_test_file_gets_one_tag_per_word(english):
  out = english["params"].runtime.output_dir
  with open(os.path.join(out, "test_predictions.txt"),
            encoding="utf-8") as f:
    blocks = [b.splitlines() for b in f.read().strip("\n").split("\n\n")]
  expected = english["test_sentences"]
  assert [[line.split(" ")[0] for line in block] for block in blocks] == [
      words for words, _ in expected]
  assert all(len(line.split(" ")) == 2 for b in blocks for line in b)
  predicted = [[line.split(" ")[1] for line in block] for block in blocks]
  assert f1_score([ner_data.to_iob1(t) for _, t in expected],
                  predicted) >= 0.9
  assert not os.path.exists(os.path.join(out, "test_results.json"))


def _runner(params, options, labels):
  """A runner on the run's best checkpoint (no training)."""
  params = settings_fields.replace(params, do_train=False, do_eval=False,
                                   do_predict=True)
  task = ner_finetuning.build_ner_task(params, options, labels, None, None)
  runner = finetuning_runner.FinetuningRunner(prepare(params), task)
  runner.restore_best()
  return runner


def _assert_export_equals_python(setup, texts, min_entities):
  params, options = setup["params"], setup["options"]
  labels = label_list.read(params.runtime.output_dir)
  served = exports.load_ner(options.export_dir)(texts)
  runner = _runner(params, options, labels)
  python = ner_finetuning.predict_entities(
      runner.predict, texts, prepare(params).tokenizer, labels, SEQ,
      options.doc_stride)
  assert len(served) == len(texts)
  for text, got, expected in zip(texts, served, python):
    for entity in got:
      assert text[entity["start"]:entity["end"]] == entity["text"]
      assert 0 < entity["score"] <= 1
    assert [(e["label"], e["start"], e["end"], e["text"]) for e in got] == [
        (e["label"], e["start"], e["end"], e["text"]) for e in expected]
    assert [e["score"] for e in got] == pytest.approx(
        [e["score"] for e in expected], abs=1e-4)
  assert sum(map(len, served)) >= min_entities
  return served


@pytest.mark.slow  # a whole NER run; make test's are test_ner_runs.py's
def test_export_spans_are_the_python_predictions(english):
  dev = ner_files.read_ner_file(english["options"].dev_file)
  texts = [" ".join(s.words) for s in dev.sentences[:30]] + TRICKY
  served = _assert_export_equals_python(english, texts, 60)
  # The entities the model tags in the dev sentences' text are their gold
  # entities (the model is at F1 >= 0.9).
  gold = [(kind, " ".join(s.words[a:b + 1])) for s in dev.sentences[:30]
          for kind, a, b in tag_schemes.entities(s.tags, "IOB1")]
  found = [(e["label"], e["text"]) for entities in served[:30]
           for e in entities]
  assert len(set(found) & set(gold)) >= 0.8 * len(set(gold))
  # Entities between accents, emoji and runs of spaces.
  assert {"Server Local", "Codec System", "Frame Heap", "Writer Novak",
          "Iterator Module"} <= {e["text"] for entities in served[-5:]
                                 for e in entities}
  with pytest.raises(UserInputError, match="is a fine-tuned NER export"):
    inspection.check_encoder_savedmodel(english["options"].export_dir)


@pytest.mark.slow
def test_export_tflite_accepts_the_ids_signature(english, tmp_path):
  from albert_tf.exports.litert.report import export_and_report
  result = export_and_report(english["options"].export_dir,
                             str(tmp_path / "ner.tflite"), seq_length=SEQ)
  description = result["description"]
  assert description["kind"] == "token_classification"
  assert description["outputs"] == ["tag_logits", "tag_probabilities"]
  assert description["labels_file"] == "labels.txt"
  assert result["max_difference"] <= 1e-4
  assert (tmp_path / "labels.json").exists()


@pytest.fixture(scope="module")
def chinese(tmp_path_factory, chinese_kit):
  """The CLUENER task, every path on ram://."""
  local = tmp_path_factory.mktemp("ner_chinese")
  records = {"train": ner_data.chinese_records(600, 0),
             "dev": ner_data.chinese_records(100, 1),
             "test": ner_data.chinese_records(30, 2)}
  corpus = chinese_kit.write_corpus(local / "corpus.txt")
  with open(corpus, "a", encoding="utf-8") as f:
    f.write("\n" + "\n".join(r["text"] for r in records["train"]) + "\n")
  tokens = chinese_kit.vocab_tokens(corpus)
  root = "ram://ner_chinese"
  paths = {}
  for split, values in records.items():
    local_path = ner_data.write_cluener(local / f"{split}.json", values)
    paths[split] = f"{root}/{split}.json"
    file_io.write_atomic(paths[split], file_io.read_bytes(local_path))
  vocab = f"{root}/vocab_chinese.txt"
  file_io.write_atomic(vocab, "\n".join(tokens) + "\n")
  config = f"{root}/albert_config.json"
  file_io.write_atomic(config, file_io.read_bytes(_config(
      local / "config.json", len(tokens), hidden_size=64)))
  params = _params(f"{root}/out", vocab_file=vocab, albert_config_file=config,
                   train_step=300, warmup_step=30)
  options = NerOptions(train_file=paths["train"], dev_file=paths["dev"],
                       test_file=paths["test"], tag_scheme="IOBES",
                       doc_stride=16, export_dir=f"{root}/export")
  results = ner_finetuning.run_ner(params, options)
  return dict(params=params, options=options, results=results,
              records=records)


@pytest.mark.slow
def test_chinese_cluener_learns_with_strict_iobes(chinese):
  results, out = chinese["results"], chinese["params"].runtime.output_dir
  print({k: round(v, 4) for k, v in results.items() if "_" not in k})
  assert results["f1"] >= 0.9 and results["step"] in (100, 200, 300)
  assert {"name_f1", "company_f1", "address_f1"} <= set(results)
  assert label_list.read(out).scheme == "IOBES"
  # dev_predictions.json: CLUENER records whose spans are IOBES entities,
  # scored by seqeval's strict mode as reported.
  gold = ner_files.read_ner_file(chinese["options"].dev_file, scheme="IOBES")
  written = ner_files.read_ner_file(file_io.join(out, "dev_predictions.json"),
                                    scheme="IOBES")
  assert max(len(s.words) for s in gold.sentences) > SEQ
  assert results["f1"] == pytest.approx(f1_score(
      [s.tags for s in gold.sentences], [s.tags for s in written.sentences],
      mode="strict", scheme=IOBES), abs=1e-12)
  test = [json.loads(line) for line in file_io.read_text(
      file_io.join(out, "test_predictions.json")).splitlines()]
  assert [r["text"] for r in test] == [r["text"]
                                       for r in chinese["records"]["test"]]
  for record in test:
    for kind, mentions in record["label"].items():
      for mention, places in mentions.items():
        assert all(record["text"][a:b + 1] == mention for a, b in places)
  # A tagged test file is scored too: test_results.json, as seqeval says.
  results = json.loads(file_io.read_text(file_io.join(out,
                                                      "test_results.json")))
  gold_test = ner_files.read_ner_file(chinese["options"].test_file,
                                      scheme="IOBES")
  written_test = ner_files.read_ner_file(
      file_io.join(out, "test_predictions.json"), scheme="IOBES")
  assert results["f1"] == pytest.approx(f1_score(
      [s.tags for s in gold_test.sentences],
      [s.tags for s in written_test.sentences], mode="strict",
      scheme=IOBES), abs=1e-12) and results["f1"] >= 0.8


@pytest.mark.slow
def test_chinese_export_spans_are_the_python_predictions(chinese):
  texts = [r["text"] for r in chinese["records"]["dev"][:20]] + (
      CHINESE_TRICKY)
  served = _assert_export_equals_python(chinese, texts, 40)
  assert {e["label"] for entities in served for e in entities} == {
      "name", "company", "address"}
