"""--input_format jsonl / parquet: same bytes as the text format, hygiene,
bad input, any filesystem, constant memory."""

import gzip
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from albert_common.errors import UserInputError
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
OPTIONS = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10)
ONE_PIECE = 1 << 20  # Each test file is one piece.
JSONL = CorpusOptions(input_format="jsonl", sentence_splitter="none")
PARQUET = CorpusOptions(input_format="parquet", sentence_splitter="none")


def _create(corpus_file, out, spm_model, **kwargs):
  kwargs.setdefault("dupe_factor", 2)
  kwargs.setdefault("num_workers", 1)
  kwargs.setdefault("piece_bytes", ONE_PIECE)
  return pretraining_writer.create_pretraining_data(
      corpus_file, out, spm_model, OPTIONS, show_progress=False, **kwargs)


def _bytes(path):
  with open(path, "rb") as f:
    return f.read()


@pytest.fixture(scope="module")
def documents(english_corpus):
  """The English corpus's documents: lists of sentences."""
  with open(english_corpus, encoding="utf-8") as f:
    blocks = f.read().split("\n\n")
  docs = [[s.strip() for s in b.split("\n") if s.strip()] for b in blocks]
  return [d for d in docs if d]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory, documents):
  """The documents as official text, JSON lines (plain, gzip) and Parquet
  (3 row groups and 1), sentences joined by newlines."""
  folder = tmp_path_factory.mktemp("corpora")
  paths = {k: str(folder / name) for k, name in [
      ("text", "c.txt"), ("jsonl", "c.jsonl"), ("gz", "c.jsonl.gz"),
      ("parquet", "c.parquet"), ("parquet1", "c1.parquet")]}
  with open(paths["text"], "w", encoding="utf-8") as f:
    f.writelines("".join(s + "\n" for s in d) + "\n" for d in documents)
  lines = "".join(json.dumps({"id": i, "text": "\n".join(d)}) + "\n"
                  for i, d in enumerate(documents))
  with open(paths["jsonl"], "w", encoding="utf-8") as f:
    f.write(lines)
  with gzip.open(paths["gz"], "wt", encoding="utf-8") as f:
    f.write(lines)
  table = pa.table({"id": list(range(len(documents))),
                    "text": ["\n".join(d) for d in documents]})
  pq.write_table(table, paths["parquet"],
                 row_group_size=len(documents) // 3 + 1)
  pq.write_table(table, paths["parquet1"])
  return paths


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, corpora, spm_model):
  out = str(tmp_path_factory.mktemp("text") / "t.tfrecord")
  return out, _create(corpora["text"], out, spm_model)


def test_json_lines_give_the_official_texts_bytes(text_run, corpora, tmp_path,
                                                  spm_model):
  out, stats = text_run
  jsonl = str(tmp_path / "j.tfrecord")
  jsonl_stats = _create(corpora["jsonl"], jsonl, spm_model, corpus=JSONL)
  assert jsonl_stats["instances"] == stats["instances"] > 1000
  assert jsonl_stats["documents"] == stats["documents"]
  assert _bytes(jsonl) == _bytes(out)


def test_parquet_gives_json_lines_bytes(text_run, corpora, tmp_path,
                                        spm_model):
  out, _ = text_run
  parquet = str(tmp_path / "p.tfrecord")
  _create(corpora["parquet1"], parquet, spm_model, corpus=PARQUET)
  assert _bytes(parquet) == _bytes(out)


def test_gzip_gives_the_plain_files_bytes_for_any_workers(corpora, tmp_path,
                                                          spm_model):
  small = dict(piece_bytes=32 * 1024, corpus=JSONL)
  plain = str(tmp_path / "plain.tfrecord")
  plain_stats = _create(corpora["jsonl"], plain, spm_model, **small)
  assert plain_stats["pieces"] > 5
  for workers in (1, 2):
    gz = str(tmp_path / f"gz{workers}.tfrecord")
    gz_stats = _create(corpora["gz"], gz, spm_model, num_workers=workers,
                       **small)
    assert gz_stats["pieces"] == plain_stats["pieces"]
    assert _bytes(gz) == _bytes(plain)


def test_parquet_row_groups_are_pieces_for_any_workers(corpora, tmp_path,
                                                       spm_model):
  runs = []
  for workers in (1, 2):
    out = str(tmp_path / f"p{workers}.tfrecord")
    stats = _create(corpora["parquet"], out, spm_model, corpus=PARQUET,
                    num_workers=workers, num_output_shards=2)
    assert stats["pieces"] == 3
    runs.append(_bytes(out + "-00000-of-00002") +
                _bytes(out + "-00001-of-00002"))
  assert runs[0] == runs[1]


def test_splitting_is_on_by_default(corpora, tmp_path, spm_model,
                                    text_run):
  _, stats = text_run
  split = _create(corpora["jsonl"], str(tmp_path / "s.tfrecord"), spm_model,
                  corpus=CorpusOptions(input_format="jsonl"))
  assert split["documents"] == stats["documents"]
  assert split["sentences"] > stats["sentences"]  # Lines with 2+ sentences.
  assert split["settings"]["corpus"]["input_format"] == "jsonl"


def test_nested_field_and_ram_filesystem(tmp_path, spm_model, documents):
  import tensorflow as tf
  lines = "".join(json.dumps({"meta": {"body": " ".join(d)}}) + "\n"
                  for d in documents[:300])
  path = "ram://corpora/nested.json.gz"
  with tf.io.gfile.GFile(path, "wb") as f:
    f.write(gzip.compress(lines.encode("utf-8")))
  out = "ram://corpora/out/n.tfrecord"
  stats = _create(path, out, spm_model, corpus=CorpusOptions(
      input_format="jsonl", text_field="meta.body"))
  assert stats["documents"] == 300 and stats["instances"] > 0
  assert tf.io.gfile.exists(out)


def test_hygiene_counts(tmp_path, spm_model):
  records = [
      "First doc. It has two sentences.",
      "Too short.",                              # 1 sentence: dropped.
      "Second doc. It is   unique here.",
      "First  doc.\nIt has two sentences.",     # Duplicate after normalising.
      "Third doc. Yes. Three sentences.",
      "Second doc. It is unique here.",         # Duplicate.
      "Fourth doc.\n\nA paragraph break.",       # 2 sentences, kept.
  ]
  path = tmp_path / "h.jsonl"
  path.write_text("".join(json.dumps({"text": r}) + "\n" for r in records))
  stats = _create(str(path), str(tmp_path / "h.tfrecord"), spm_model,
                  corpus=CorpusOptions(input_format="jsonl",
                                       min_document_sentences=2,
                                       dedup_documents=True))
  assert (stats["documents"], stats["short_documents"],
          stats["duplicate_documents"]) == (4, 1, 2)
  summary = json.load(open(str(tmp_path / "h.tfrecord.stats.json")))
  assert summary["short_documents"] == 1
  assert summary["duplicate_documents"] == 2
  # Off by default: every document is read.
  plain = _create(str(path), str(tmp_path / "p.tfrecord"), spm_model,
                  corpus=CorpusOptions(input_format="jsonl"))
  assert (plain["documents"], plain["short_documents"],
          plain["duplicate_documents"]) == (7, 0, 0)


def test_hygiene_on_the_text_format(tmp_path, spm_model):
  path = tmp_path / "h.txt"
  path.write_text("A one.\nA two.\n\nShort.\n\nA one.\nA two.\n\n")
  stats = _create(str(path), str(tmp_path / "h.tfrecord"), spm_model,
                  corpus=CorpusOptions(min_document_sentences=2,
                                       dedup_documents=True))
  assert (stats["documents"], stats["short_documents"],
          stats["duplicate_documents"]) == (1, 1, 1)


def _bad_input(tmp_path, case):
  """(input path, CorpusOptions, expected message) of a bad input."""
  good = json.dumps({"text": "A fine document. It has two sentences."})
  if case == "parquet_column":
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [1], "body": ["x. y."]}), path)
    return path, PARQUET, "bad.parquet: no column 'text' (--text_field); " \
                          "its columns: id, body"
  if case == "parquet_null":
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": ["One. Two.", None]}), path)
    return path, PARQUET, "bad.parquet, row group 0, row 1: field 'text' " \
                          "is null, not a string"
  if case == "cut_short":
    path = tmp_path / "bad.jsonl.gz"
    data = gzip.compress(((good + "\n") * 2000).encode())
    path.write_bytes(data[:len(data) // 2])
    return path, JSONL, "bad.jsonl.gz: compressed file cut short"
  path = tmp_path / "bad.jsonl"
  bad = {"json": '{"text": "unterminated',
         "field": json.dumps({"body": "x", "id": 3}),
         "type": json.dumps({"text": ["a", "b"]})}[case]
  path.write_text(f"{good}\n{good}\n{bad}\n{good}\n")
  expected = {"json": "bad.jsonl:3: not a JSON record",
              "field": "bad.jsonl:3: no field 'text' (--text_field); the "
                       "record has: body, id",
              "type": "bad.jsonl:3: field 'text' is a JSON list, not a "
                      "string"}[case]
  return path, JSONL, expected


BAD_CASES = ["json", "field", "type", "parquet_column", "parquet_null",
             "cut_short"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_one_error_and_no_output(case, tmp_path, spm_model):
  path, corpus, expected = _bad_input(tmp_path, case)
  out = tmp_path / "out" / "b.tfrecord"
  with pytest.raises(UserInputError) as error:
    _create(str(path), str(out), spm_model, corpus=corpus)
  assert expected in str(error.value)
  assert "\n" not in str(error.value)
  leftovers = list(out.parent.iterdir()) if out.parent.exists() else []
  assert leftovers == []


@pytest.mark.parametrize("case", ["json", "field", "type", "parquet_null",
                                  "cut_short"])
def test_skip_bad_records_counts_them(case, tmp_path, spm_model):
  path, corpus, _ = _bad_input(tmp_path, case)
  corpus = CorpusOptions(**dict(corpus.__dict__, skip_bad_records=True))
  stats = _create(str(path), str(tmp_path / "s.tfrecord"), spm_model,
                  corpus=corpus)
  assert stats["bad_records"] == 1
  assert stats["instances"] > 0


def _cli(*args):
  return subprocess.run(
      [sys.executable, "-m", "tools.create_pretraining_data", *args],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def test_cli_bad_record_is_one_line_exit_1(tmp_path, spm_model):
  path, _, expected = _bad_input(tmp_path, "field")
  out = tmp_path / "out" / "c.tfrecord"
  result = _cli(f"--input_file={path}", f"--output_file={out}",
                f"--spm_model_file={spm_model}", "--input_format=jsonl",
                "--progress=false")
  assert result.returncode == 1, result.stderr
  assert result.stderr.strip().splitlines()[-1] == f"error: {path}:3: " + \
      expected.split(":3: ", 1)[1] + "; fix it or pass --skip_bad_records"
  assert "Traceback" not in result.stderr
  assert not out.parent.exists() or not list(out.parent.iterdir())


def test_cli_refuses_a_splitter_for_the_text_format(tmp_path, spm_model):
  result = _cli("--input_file=x.txt", f"--output_file={tmp_path}/o",
                f"--spm_model_file={spm_model}",
                "--sentence_splitter=blingfire")
  assert result.returncode == 1
  assert "--sentence_splitter=blingfire needs --input_format" in \
      result.stderr.strip().splitlines()[-1]


def test_split_sentences_writes_what_data_creation_reads(corpora, tmp_path,
                                                         spm_model):
  from data_pipeline.pretraining import sentence_corpus
  corpus = CorpusOptions(input_format="jsonl")
  text = str(tmp_path / "split.txt")
  stats = sentence_corpus.write_sentences(corpora["gz"], text, corpus)
  from_text = _create(text, str(tmp_path / "t.tfrecord"), spm_model)
  from_jsonl = _create(corpora["gz"], str(tmp_path / "j.tfrecord"),
                       spm_model, corpus=corpus)
  assert stats.documents == from_jsonl["documents"]
  assert stats.sentences >= from_jsonl["sentences"]  # Before tokenizing.
  assert _bytes(str(tmp_path / "t.tfrecord")) == _bytes(
      str(tmp_path / "j.tfrecord"))
  assert from_text["instances"] == from_jsonl["instances"]


def test_split_sentences_cli_one_output_per_input(corpora, tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "tools.split_sentences",
       f"--input_file={corpora['parquet1']},{corpora['jsonl']}",
       "--input_format=parquet", f"--output_file={tmp_path}/out/"],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  # A JSON-lines file read as Parquet: one line naming it, nothing written.
  assert result.returncode == 1
  assert "c.jsonl: not a readable Parquet file" in result.stderr
  assert not (tmp_path / "out").exists() or not list(
      (tmp_path / "out").iterdir())
  result = subprocess.run(
      [sys.executable, "-m", "tools.split_sentences",
       f"--input_file={corpora['parquet']},{corpora['parquet1']}",
       "--input_format=parquet", "--sentence_splitter=none",
       f"--output_file={tmp_path}/out/"],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  assert sorted(os.listdir(tmp_path / "out")) == ["c.txt", "c1.txt"]
  # Sentences not split: the official text the corpus came from.
  assert _bytes(str(tmp_path / "out" / "c.txt")) == _bytes(corpora["text"])
  assert _bytes(str(tmp_path / "out" / "c1.txt")) == _bytes(corpora["text"])


@pytest.mark.slow
def test_beam_parquet_equals_local_json_lines(corpora, tmp_path, spm_model,
                                              monkeypatch):
  from data_pipeline.pretraining.beam import pipeline as beam_pipeline
  monkeypatch.setenv("PYTHONPATH", REPO)  # For the worker processes.
  settings = dict(dupe_factor=2, piece_bytes=ONE_PIECE, num_output_shards=2)
  local = str(tmp_path / "local.tfrecord")
  pretraining_writer.create_pretraining_data(
      corpora["jsonl"], local, spm_model, OPTIONS, num_workers=1,
      show_progress=False, corpus=JSONL, **settings)
  beam = str(tmp_path / "beam" / "b.tfrecord")
  stats = beam_pipeline.create_pretraining_data_beam(
      corpora["parquet1"], beam, spm_model, OPTIONS, runner="DirectRunner",
      pipeline_args=["--direct_num_workers=2",
                     "--direct_running_mode=multi_processing"],
      corpus=PARQUET, **settings)
  assert stats["instances"] > 1000
  for shard in ("-00000-of-00002", "-00001-of-00002"):
    assert _bytes(beam + shard) == _bytes(local + shard)


_PEAK_RSS = """
import json, resource, sys
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining.instance_options import InstanceOptions
corpus_file, out, model = sys.argv[1:]
stats = pretraining_writer.create_pretraining_data(
    corpus_file, out, model, InstanceOptions(max_seq_length=64,
    max_predictions_per_seq=10), dupe_factor=1, num_workers=1,
    show_progress=False, piece_bytes=64 * 1024,
    corpus=CorpusOptions(input_format="jsonl"))
print(json.dumps([stats["pieces"],
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]))
"""


@pytest.mark.slow
def test_constant_memory_on_a_16_times_larger_corpus(corpora, tmp_path,
                                                     spm_model):
  with open(corpora["jsonl"], "rb") as f:
    one = f.read()
  results = []
  for copies in (1, 16):
    path = tmp_path / f"x{copies}.jsonl.gz"
    with gzip.open(path, "wb") as f:
      for _ in range(copies):
        f.write(one)
    result = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, str(path),
         str(tmp_path / f"x{copies}.tfrecord"), spm_model],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    results.append(json.loads(result.stdout.strip().splitlines()[-1]))
  (small_pieces, small_rss), (large_pieces, large_rss) = results
  assert large_pieces >= 16 * small_pieces - 16
  assert large_rss <= 1.2 * small_rss, results
