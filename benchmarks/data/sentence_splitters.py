r"""Sentence splitters measured for --sentence_splitter: accuracy and speed.

Accuracy: the hand-written test set tests/data/sentence_boundaries.jsonl
(tricky English and other Latin-script cases: abbreviations, decimals,
versions, URLs, e-mail addresses, ellipses, quotes; Chinese and Japanese
full stops with closing quotes and brackets). Each case's sentences are
joined (a space between Latin-script sentences, nothing between CJK ones);
a splitter's boundaries (character offsets where a sentence ends) are
compared with the gold ones: score = |predicted & gold| / |predicted | gold|
over all cases (missed and false boundaries both count against it).

Speed: MB/s of text split, one process, on the stdlib-docstring English
corpus (`data_pipeline.corpora.stdlib_corpus`) joined into paragraphs of 8
lines. Compare with data creation's own input rate (BENCHMARKS.md "Data
creation": ~2.7 MB of text in ~1 s per process at max_seq_length 128,
dupe_factor 5).

Candidates other than blingfire (the pinned dependency) are installed only
for this measurement: `pip install pysbd==0.3.4 syntok==1.4.4
spacy==3.8.18`; missing ones are reported as such.

  python -m benchmarks.data.sentence_splitters [--write]
"""

import argparse
import json
import os
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CASES = os.path.join(REPO, "tests", "data", "sentence_boundaries.jsonl")


def load_cases(path=CASES):
  """[(lang, text, gold boundary offsets)] of the test set."""
  cases = []
  with open(path, encoding="utf-8") as f:
    for line in f:
      case = json.loads(line)
      sep = "" if case["lang"] == "zh" else " "
      text, ends = "", []
      for i, sentence in enumerate(case["sentences"]):
        text += (sep if i else "") + sentence
        ends.append(len(text))
      cases.append((case["lang"], text, set(ends)))
  return cases


def boundaries(text, sentences):
  """End offsets of `sentences` located in order in `text` (whitespace
  between them skipped)."""
  ends, pos = set(), 0
  for sentence in sentences:
    sentence = sentence.strip()
    if not sentence:
      continue
    found = text.find(sentence, pos)
    if found < 0:  # A splitter that rewrote the text: count its end only.
      found = pos
    pos = found + len(sentence)
    ends.add(pos)
  ends.add(len(text.rstrip()))
  return ends


def score(split, cases):
  """{lang: (exact boundaries / all boundaries, wrong cases)}."""
  result = {}
  for lang in sorted({c[0] for c in cases}) + ["all"]:
    hit = union = 0
    wrong = []
    for case_lang, text, gold in cases:
      if lang not in ("all", case_lang):
        continue
      predicted = boundaries(text, split(text, case_lang))
      hit += len(predicted & gold)
      union += len(predicted | gold)
      if predicted != gold:
        wrong.append(text)
    result[lang] = (hit / union, wrong)
  return result


def candidates():
  """{name: split(text, lang) -> sentences}; None for those not installed."""
  out = {}
  try:
    from data_pipeline.corpora import sentence_splitter
    out["ours (blingfire + closing marks)"] = (
        lambda t, lang: sentence_splitter.split_line(t))
  except ImportError:
    out["ours (blingfire + closing marks)"] = None
  try:
    import blingfire
    out["blingfire 0.1.8"] = (
        lambda t, lang: blingfire.text_to_sentences(t).split("\n"))
  except ImportError:
    out["blingfire 0.1.8"] = None
  try:
    import pysbd
    segs = {lang: pysbd.Segmenter(language=lang, clean=False)
            for lang in ("en", "zh")}
    out["pysbd 0.3.4"] = lambda t, lang: segs[lang].segment(t)
  except ImportError:
    out["pysbd 0.3.4"] = None
  try:
    from syntok import segmenter

    def syntok_split(text, lang):
      del lang
      return ["".join(t.spacing + t.value for t in s).strip()
              for p in segmenter.analyze(text) for s in p]
    out["syntok 1.4.4"] = syntok_split
  except ImportError:
    out["syntok 1.4.4"] = None
  try:
    import spacy
    nlp = {"en": spacy.blank("en"), "zh": spacy.blank("xx")}
    for pipe in nlp.values():
      pipe.add_pipe("sentencizer")
    out[f"spaCy {spacy.__version__} sentencizer"] = (
        lambda t, lang: [s.text for s in nlp[lang](t).sents])
  except ImportError:
    out["spaCy sentencizer"] = None
  return out


def speed_text(max_bytes=2_000_000):
  """English paragraphs (8 corpus lines each), about `max_bytes`."""
  from data_pipeline.corpora import stdlib_corpus
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "c.txt")
    stdlib_corpus.write_stdlib_corpus(path, max_bytes=max_bytes)
    lines = [x.strip() for x in open(path, encoding="utf-8") if x.strip()]
  return [" ".join(lines[i:i + 8]) for i in range(0, len(lines), 8)]


def mb_per_second(split, paragraphs, budget=10.0):
  """Text MB/s of `split` over `paragraphs` (stops after `budget` s)."""
  done = 0
  start = time.perf_counter()
  for paragraph in paragraphs:
    split(paragraph, "en")
    done += len(paragraph.encode("utf-8"))
    if time.perf_counter() - start > budget:
      break
  return done / 1e6 / (time.perf_counter() - start)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--write", action="store_true",
                      help="Also write the table to BENCHMARKS.md.")
  parser.add_argument("--verbose", action="store_true",
                      help="List the cases each splitter gets wrong.")
  args = parser.parse_args()
  cases = load_cases()
  paragraphs = speed_text()
  rows = []
  for name, split in candidates().items():
    if split is None:
      rows.append(f"| {name} | not installed | | | |")
      continue
    scores = score(split, cases)
    speed = mb_per_second(split, paragraphs)
    rows.append(f"| {name} | {scores['en'][0]:.3f} | {scores['zh'][0]:.3f} "
                f"| {scores['all'][0]:.3f} | {speed:.2f} |")
    if args.verbose:
      langs = {text: lang for lang, text, _ in cases}
      for text in scores["all"][1]:
        print(f"  {name} wrong: {text}  ->  {split(text, langs[text])}")
  n_en = sum(c[0] == "en" for c in cases)
  body = "\n".join([
      "`python -m benchmarks.data.sentence_splitters --write`; "
      f"{os.cpu_count()} CPU cores, one process, load average "
      f"{os.getloadavg()[0]:.1f}. Accuracy: exact boundaries (|predicted & "
      "gold| / |predicted | gold|) on tests/data/sentence_boundaries.jsonl, "
      f"{n_en} Latin-script and {len(cases) - n_en} Chinese/Japanese cases "
      "(abbreviations, decimals, versions, URLs, e-mail addresses, "
      "ellipses, quotes, closing brackets). Speed: MB of English text split "
      f"per second ({sum(len(p) for p in paragraphs) / 1e6:.1f} MB of "
      "stdlib-docstring paragraphs). Data creation itself reads about 2.7 "
      "MB of text per second per process (\"Data creation\" below: 23,804 "
      "instances from 2.7 MB in 0.94 s): the splitter chosen, blingfire "
      "with its closing-mark fix-up, must split faster than that. "
      "Candidates other than blingfire were installed only for this "
      "measurement.",
      "",
      "| splitter | Latin exact | CJK exact | all exact | MB/s |",
      "| --- | --- | --- | --- | --- |"] + rows)
  print(body)
  if args.write:
    from benchmarks import common  # Imports TensorFlow: only here.
    common.update_benchmarks_md("Sentence splitters", body)


if __name__ == "__main__":
  main()
