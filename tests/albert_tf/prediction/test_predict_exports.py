"""tools.predict over real exports: its rows equal the export's own
serving_default outputs, for every kind and input format; a SIGKILL then
a rerun ends with the files of an uninterrupted run."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from albert_tf.prediction import runner
from albert_tf.prediction.options import PredictOptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _texts(english_corpus, n, seed=0):
  """n texts of 1-60 words (some past the export's 64 tokens), a few with
  accents and CJK characters."""
  with open(english_corpus, encoding="utf-8") as f:
    words = f.read().split()[:5000]
  rng = np.random.default_rng(seed)
  texts = []
  for i in range(n):
    start = int(rng.integers(len(words) - 60))
    text = " ".join(words[start:start + int(rng.integers(1, 60))])
    texts.append(text + (" Café à Paris 北京" if i % 5 == 0 else ""))
  return texts


def _write(folder, name, records):
  """records (dicts of str) as the file `name` (its format from the
  extension)."""
  path = os.path.join(folder, name)
  if name.endswith(".parquet"):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=7)
  elif name.endswith(".jsonl"):
    with open(path, "w", encoding="utf-8") as f:
      f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
  elif name.endswith(".txt"):
    with open(path, "w", encoding="utf-8") as f:
      f.writelines(r["text"] + "\n" for r in records)
  elif name.endswith(".tsv"):  # no quoting (the texts hold no tab)
    with open(path, "w", encoding="utf-8") as f:
      f.writelines("\t".join(r) + "\n" for r in
                   [list(records[0])] + [list(r.values()) for r in records])
  else:
    with open(path, "w", newline="", encoding="utf-8") as f:
      writer = csv.DictWriter(f, list(records[0]))
      writer.writeheader()
      writer.writerows(records)
  return path


def _read_jsonl(folder):
  return [json.loads(line) for name in sorted(os.listdir(folder))
          if name.startswith("part")
          for line in open(os.path.join(folder, name), encoding="utf-8")]


def _expected(kind, path, texts_a, texts_b, embeddings="pooled"):
  """The export's serving_default on all texts at once, by plain name."""
  import tensorflow as tf

  from albert_tf.exports import load_saved_model
  strings = tf.constant(texts_a)
  if kind == "encoder":
    pre = load_saved_model(os.path.join(path, "preprocessor"))
    inputs = pre.signatures["serving_default"](sentences=strings)
    out = load_saved_model(os.path.join(path, "encoder")).signatures[
        "serving_default"](**inputs)
    if embeddings == "pooled":
      return [{"embedding": v} for v in out["pooled_output"].numpy()]
    mask = inputs["input_mask"].numpy()[..., None]
    mean = (out["sequence_output"].numpy() * mask).sum(1) / mask.sum(1)
    return [{"embedding": v} for v in mean]
  serve = load_saved_model(path).signatures["serving_default"]
  if kind == "squad":
    out = {k: v.numpy() for k, v in serve(
        context=strings, question=tf.constant(texts_b)).items()}
    return [{"answer": a.decode(), "start": s, "end": e, "score": score}
            for a, s, e, score in zip(out["answer"], out["start"],
                                      out["end"], out["score"])]
  if kind == "ner":
    out = {k: v.numpy() for k, v in serve(text=strings).items()}
    return [{"entities": [
        (label.decode(), int(s), int(e), texts_a[i][s:e], float(score))
        for label, s, e, score in zip(
            out["entity_label"][i], out["entity_start"][i],
            out["entity_end"][i], out["entity_score"][i]) if label]}
        for i in range(len(texts_a))]
  if texts_b is not None:
    out = serve(text_a=strings, text_b=tf.constant(texts_b))
  else:
    out = serve(sentences=strings)
  out = {k: v.numpy() for k, v in out.items()}
  if kind == "regression":
    return [{"value": v} for v in out["score"]]
  if kind == "classifier":
    return [{"label": name.decode(), "probabilities": p}
            for name, p in zip(out["label"], out["probabilities"])]
  return [{"labels": [n.decode() for n in names if n], "probabilities": p}
          for names, p in zip(out["labels"], out["probabilities"])]


def _assert_rows_equal(kind, rows, expected, labels=()):
  for row, want in zip(rows, expected):
    if kind == "ner":
      got = [(e["label"], e["start"], e["end"], e["text"], e["score"])
             for e in row["entities"]]
      assert [g[:4] for g in got] == [w[:4] for w in want["entities"]]
      np.testing.assert_allclose([g[4] for g in got],
                                 [w[4] for w in want["entities"]],
                                 atol=1e-5)
      continue
    for key, value in want.items():
      if key == "probabilities":
        np.testing.assert_allclose([row[key][n] for n in labels], value,
                                   atol=1e-5)
      elif key in ("value", "embedding", "score"):
        np.testing.assert_allclose(row[key], value, atol=1e-5)
      else:
        assert row[key] == value


CASES = [("classifier", "a.jsonl"), ("classifier", "a.csv"),
         ("classifier", "a.tsv"), ("classifier", "a.parquet"),
         ("classifier", "a.txt"), ("regression", "a.csv"),
         ("multi_label", "a.parquet"), ("ner", "a.jsonl"), ("squad", "a.jsonl"),
         ("encoder", "a.txt"), ("encoder-mean", "a.jsonl")]


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", CASES)
def test_rows_equal_the_exports_own_outputs(kind, name, prediction_exports,
                                            english_corpus, tmp_path):
  kind, _, embeddings = kind.partition("-")
  texts = _texts(english_corpus, 23, seed=len(name))
  pair = kind in ("regression", "squad")
  records = [dict({"key": f"k{i}", "text": t},
                  **({"other": texts[-1 - i]} if pair else {}))
             for i, t in enumerate(texts)]
  if kind == "squad":  # the context (text) and a question (other)
    records = [{"key": r["key"], "context": r["text"],
                "question": r["other"][:40]} for r in records]
  path = _write(str(tmp_path), name, records)
  plain = name.endswith(".txt")
  options = PredictOptions(
      model=prediction_exports[kind], input_file=path,
      output_dir=str(tmp_path / "out"), rows_per_shard=10, batch_size=4,
      id_column="" if plain else "key",
      text_b_column="other" if kind == "regression" else "",
      embeddings=embeddings or "pooled")
  manifest = runner.predict_files(options)
  assert manifest["kind"] == kind and manifest["rows"] == len(texts)
  rows = _read_jsonl(str(tmp_path / "out"))
  keys = ([r["row"] for r in rows] if plain else
          [int(r["key"][1:]) for r in rows])
  assert sorted(keys) == list(range(len(texts)))
  second = ([r["question"] for r in records] if kind == "squad" else
            [r["other"] for r in records] if pair else None)
  expected = _expected(kind, prediction_exports[kind], texts, second,
                       embeddings or "pooled")
  labels = {"classifier": ("billing", "other", "shipping"),
            "multi_label": ("a", "b", "c", "d")}.get(kind, ())
  _assert_rows_equal(kind, rows, [expected[k] for k in keys], labels)
  if kind == "ner":  # the comparison covered entities
    assert sum(len(r["entities"]) for r in rows) > 0
  if kind == "squad":  # offsets into the context (-1: no valid span)
    found = [(k, r) for k, r in zip(keys, rows) if r["start"] >= 0]
    assert found and all(texts[k][r["start"]:r["end"]] == r["answer"]
                         for k, r in found)


def _tool(args, **kwargs):
  return subprocess.Popen(
      [sys.executable, "-m", "tools.predict"] + args, cwd=ROOT,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def _files(folder):
  return {n: open(os.path.join(folder, n), "rb").read()
          for n in sorted(os.listdir(folder))}


@pytest.mark.slow
def test_sigkill_then_rerun_gives_the_uninterrupted_files(
    prediction_exports, english_corpus, tmp_path):
  texts = _texts(english_corpus, 600, seed=9)
  path = _write(str(tmp_path), "in.jsonl",
                [{"id": i, "text": t} for i, t in enumerate(texts)])
  args = [f"--model={prediction_exports['classifier']}",
          f"--input_file={path}", "--rows_per_shard=25", "--batch_size=8",
          "--id_column=id", "--output_format=parquet"]
  reference = str(tmp_path / "reference")
  runner.predict_files(PredictOptions(
      model=prediction_exports["classifier"], input_file=path,
      output_dir=reference, rows_per_shard=25, batch_size=8, id_column="id",
      output_format="parquet"))
  killed = str(tmp_path / "killed")
  process = _tool(args + [f"--output_dir={killed}"])
  deadline = time.monotonic() + 300
  while time.monotonic() < deadline and process.poll() is None and not any(
      n.startswith("part-") for n in (os.listdir(killed)
                                      if os.path.isdir(killed) else [])):
    time.sleep(0.02)
  process.send_signal(signal.SIGKILL)
  process.wait()
  done = [n for n in os.listdir(killed) if n.startswith("part-")]
  assert 0 < len(done) < 24 and "manifest.json" not in os.listdir(killed)
  rerun = _tool(args + [f"--output_dir={killed}"])
  _, err = rerun.communicate(timeout=600)
  assert rerun.returncode == 0, err.decode()[-2000:]
  assert _files(killed) == _files(reference)
