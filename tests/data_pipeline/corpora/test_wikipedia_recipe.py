"""The Wikipedia recipe of docs/corpora-and-beam.md (its command block is
marked as tested by this test) on a small hand-written MediaWiki dump:
wikiextractor --json, then create_pretraining_data --input_format=jsonl."""

import bz2
import glob
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("wikiextractor")  # requirements.txt pins it (AGPL).

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
DUMP = os.path.join(REPO, "tests", "data", "wiki_dump.xml")


def _run(*args, cwd):
  result = subprocess.run([sys.executable, "-m", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO,
                                   TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-3000:]
  return result


def test_dump_to_tfrecords(tmp_path, spm_model):
  dump = tmp_path / "enwiki-test-pages-articles.xml.bz2"
  with open(DUMP, "rb") as f:
    dump.write_bytes(bz2.compress(f.read()))
  _run("wikiextractor.WikiExtractor", "--json", "--processes", "1",
       "-b", "100M", "-o", "wiki", str(dump), cwd=tmp_path)
  files = sorted(glob.glob(str(tmp_path / "wiki" / "*" / "wiki_*")))
  records = [json.loads(line) for f in files for line in open(f)]
  assert [r["title"] for r in records] == ["Anarchism", "Autism"]
  # What data creation will read: sentences split, markup gone.
  _run("tools.split_sentences", "--input_file=wiki/*/wiki_*",
       "--input_format=jsonl", "--output_file=wiki.txt", cwd=tmp_path)
  assert (tmp_path / "wiki.txt").read_text().split("\n") == [
      "Anarchism is a political philosophy.",
      "It was described by Dr. Smith in 1.5 volumes, e.g. in the U.S. "
      "edition.",
      "History.",
      "The term appeared in the 19th century.",
      "Many writers used it.",
      "",
      "Autism is a neurodevelopmental disorder.",
      "Signs appear early.",
      "It is studied widely.",
      "See version 2.0 of the guide.",
      "", ""]
  _run("tools.create_pretraining_data", "--input_file=wiki/*/wiki_*",
       "--input_format=jsonl", "--min_document_sentences=2",
       "--output_file=data/wiki.tfrecord", "--num_output_shards=2",
       f"--spm_model_file={spm_model}", "--max_seq_length=64",
       "--max_predictions_per_seq=10", "--dupe_factor=10",
       "--progress=false", cwd=tmp_path)
  stats = json.load(open(tmp_path / "data" / "wiki.tfrecord.stats.json"))
  assert (stats["documents"], stats["sentences"]) == (2, 9)
  assert stats["instances"] >= 20 and stats["short_documents"] == 0
