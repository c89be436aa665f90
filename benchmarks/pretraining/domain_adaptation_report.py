"""What benchmarks.pretraining.domain_adaptation measures, its goal checks
and where it writes them.

The goals (issue: continued pretraining, section 4), as checked here:
  exact start   each old-vocabulary continued run's evaluation before its
                first update (TensorBoard eval/ at step 0, written by the
                run) against the source run's final evaluation
                (eval_results.json) on the same held-out docstring records:
                MLM and SOP loss within 1e-5, accuracies within 1e-6.
  fewer pieces  pieces per word (words as BERT's basic tokenizer cuts them)
                of the held-out domain text: extended <= 0.75 x old.
  downstream    the extended runs' mean dev accuracy above the old
                vocabulary's by more than the seed spread (the larger of
                the two contenders' max - min over seeds); the difference
                seed by seed is given beside it.
  general text  token MLM accuracy on the source's held-out docstring
                records (the original corpus as its users hold it: old
                ids, every one valid in the extended vocabulary), the
                extended model before any update against the source,
                within 0.5 points: the N new rows compete in the softmax
                and nothing else differs. Beside it: the extended run's
                step-0 evaluation of the records rewritten with the
                extended tokenizer (they mask other pieces where a new
                piece applies), and whole-word accuracy on the same
                docstring windows with the same words masked.
"""

import os
import statistics
from typing import Dict, List

from albert_common import file_io
from benchmarks import common
from benchmarks.pretraining import whole_word_mlm

SECTIONS = {
    "science": "Continued pretraining on a new domain (scientific Python "
               "prose)",
    "code": "Continued pretraining on a new domain (standard library code)"}
# domain -> (the corpus, the downstream task), as the report says them.
DOMAIN_TEXT = {
    "science": (
        "the docstring prose of numpy, scipy, scikit-learn and pandas "
        "(descriptions and Notes; code, parameter tables and math dropped; "
        "`benchmarks/pretraining/science_corpus.py`), split by file",
        "which of 6 subpackage groups (scipy.stats, scipy.signal, "
        "scipy.linalg, sklearn models, sklearn data, pandas) a docstring "
        "paragraph comes from"),
    "code": (
        "the standard library's code without docstrings "
        "(`benchmarks/pretraining/code_corpus.py`), split by file",
        "which of 6 packages a 4-line snippet comes from")}
DOCS_PAGE = os.path.join(common.REPO_ROOT, "docs",
                         "continued-pretraining.md")
DOCS_START = "<!-- domain_adaptation results: written by the benchmark -->"
DOCS_END = "<!-- end of domain_adaptation results -->"
WINDOW_SEED = 0


def eval_scalars(output_dir: str) -> Dict[int, Dict[str, float]]:
  """{step: {tag: value}} of a run's TensorBoard eval/ summaries."""
  import tensorflow as tf
  scalars = {}
  event_dir = file_io.join(output_dir, "eval")
  for name in sorted(tf.io.gfile.listdir(event_dir)):
    for record in tf.data.TFRecordDataset(file_io.join(event_dir, name)):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        scalars.setdefault(event.step, {})[value.tag] = float(
            tf.make_ndarray(value.tensor))
  return scalars


def load_pretrainer(config_path: str, checkpoint: str):
  """An AlbertPretrainer with every weight of `checkpoint`."""
  import tf_keras

  from albert_tf import AlbertEncoder
  from albert_tf import AlbertPretrainer
  from albert_tf.checkpoints.weight_loading import load_weights_into
  from albert_tf.config import AlbertConfig
  tf_keras.backend.clear_session()
  model = AlbertPretrainer(AlbertEncoder(AlbertConfig.from_json_file(
      config_path)))
  load_weights_into(model, checkpoint)
  return model


def records_mlm_accuracy(model, records: str, source) -> float:
  """Token MLM accuracy (the pretraining evaluation's: argmax over the
  whole vocabulary, weighted by masked_lm_weights) of `model` on one pass
  over pretraining records, in full batches of 64 as run_pretraining's
  evaluation reads them at the benchmark's --eval_batch_size=64 (so the
  source's figure here is its eval_results.json's)."""
  import numpy as np
  import tensorflow as tf

  from albert_tf.training.pretraining.runner import MODEL_INPUTS
  from data_pipeline.pretraining import reader
  correct = total = 0.0
  for batch in reader.pretraining_dataset(
      records, 64, source.max_seq_length, source.max_predictions_per_seq,
      is_training=False):
    logits = model({k: batch[k] for k in MODEL_INPUTS},
                   training=False)["mlm_logits"]
    right = tf.equal(tf.argmax(logits, -1, output_type=tf.int32),
                     tf.cast(batch["masked_lm_ids"], tf.int32))
    weights = batch["masked_lm_weights"].numpy()
    correct += float(np.sum(right.numpy() * weights))
    total += float(np.sum(weights))
  return correct / total


CURVE_SIZES = (500, 1500, 4000, 8000)


def cut_curve(spm_model: str, train_lines: List[str],
              heldout_lines: List[str], sizes=CURVE_SIZES) -> List[Dict]:
  """Pieces per word of the held-out lines after extending `spm_model`
  with N pieces learned on the training lines, as tools.extend_vocabulary
  chooses them (ranking `saving`, domain model 4 N + 32, seed 12345), for
  each N and with the domain model split by Unicode script (ALBERT's
  recipe) or not: [{"split", "n", "chosen", "pieces_per_word"}]; "chosen"
  < n where the domain supplies fewer candidates."""
  from data_pipeline.tokenization import sentencepiece_tokenizer as spt
  from data_pipeline.tokenization import vocabulary_extension as vx
  old = spt.SentencePieceTokenizer(spm_model)
  proto = vx.read_model_proto(file_io.read_bytes(spm_model), spm_model)
  text = [t for t in (old.preprocess(s) for s in train_lines) if t]
  curve = []
  for split in (True, False):
    for n in sizes:
      chosen = vx.rank(vx.sentencepiece_candidates(
          proto, text, 4 * n + 32, 12345, split), "saving")[:n] if n else []
      new = spt.SentencePieceTokenizer(
          spm_model, old.do_lower_case,
          fs=vx.BytesFile(vx.extend_sentencepiece(proto, chosen))
      ) if chosen else old
      count = vx.count_pieces(new, heldout_lines)
      curve.append(dict(split=split, n=n, chosen=len(chosen),
                        pieces_per_word=count["pieces"] / count["words"]))
  return curve


def curve_table(curve: List[Dict], old_ppw: float) -> str:
  """N down, the two splits across: pieces per word (cut)."""
  def cell(point):
    text = (f"{point['pieces_per_word']:.3f} "
            f"({1 - point['pieces_per_word'] / old_ppw:.1%} fewer)")
    if point["chosen"] < point["n"]:
      text += f", {point['chosen']:,} pieces: all the domain supplies"
    return text
  by = {(p["split"], p["n"]): p for p in curve}
  sizes = sorted({p["n"] for p in curve})
  return common.markdown_table(
      ["new pieces N", "split by script (ALBERT's recipe, the default)",
       "--split_by_unicode_script=false"],
      [[f"{n:,}", cell(by[True, n]), cell(by[False, n])] for n in sizes])


def spread(values: List[float]) -> Dict[str, float]:
  """mean, sample standard deviation and max - min of seed results."""
  return {"mean": statistics.mean(values),
          "std": statistics.stdev(values) if len(values) > 1 else 0.0,
          "range": max(values) - min(values), "values": list(values)}


def punctuation_share(tokenizer, lines: List[str]) -> float:
  """The share of pieces with no letter and no digit (after the word-start
  mark): the ALBERT SentencePiece recipe splits text where its Unicode
  script changes, so no piece joins a letter to punctuation and these
  pieces stay however many pieces a vocabulary adds."""
  total = bare = 0
  for line in lines:
    for piece in tokenizer.tokenize(line):
      total += 1
      bare += not any(c.isalnum() for c in piece.lstrip("\u2581"))
  return bare / max(1, total)


def _documents(text: str) -> List[List[str]]:
  return [d.splitlines() for d in text.split("\n\n") if d.strip()]


def measure(src, dom, runs, downstream, source, run) -> Dict:
  """Every figure of the report (see the module doc)."""
  from data_pipeline.tokenization import sentencepiece_tokenizer as spt
  from data_pipeline.tokenization import vocabulary_extension as vx
  old = spt.SentencePieceTokenizer(src["spm_model"])
  new = spt.SentencePieceTokenizer(dom["extended_spm"])
  seq = source.max_seq_length
  domain_docs = dom["corpus"].documents("heldout")
  lines = [line for doc in domain_docs for line in doc]
  tokenizers = {"old": old, "new": new}
  pieces = {k: vx.count_pieces(t, lines) for k, t in dict(
      tokenizers, domain_only=spt.SentencePieceTokenizer(
          dom["domain_spm"] + ".model")).items()}
  out = {"pieces_per_word": {k: c["pieces"] / c["words"]
                             for k, c in pieces.items()},
         "cut_curve": cut_curve(
             src["spm_model"],
             [line for doc in dom["corpus"].documents("train")
              for line in doc], lines),
         "unknown_rate": {k: whole_word_mlm.unknown_rate(t, lines)
                          for k, t in tokenizers.items()},
         "heldout_words": pieces["old"]["words"],
         "punctuation_share": {k: punctuation_share(t, lines)
                               for k, t in tokenizers.items()}}
  masked = {}
  for corpus, docs in (("domain", domain_docs), ("general", _documents(
      file_io.read_text(src["heldout_text"])))):
    windows = whole_word_mlm.word_windows(docs, run.mlm_windows,
                                          WINDOW_SEED)
    keep = whole_word_mlm.fitting_windows(windows, [old, new], seq)
    windows = [windows[i] for i in keep]
    for name, tokenizer in tokenizers.items():
      masked[corpus, name] = whole_word_mlm.sequences(
          tokenizer, windows, WINDOW_SEED, seq)
  new_config = dom["extended_config"]

  def accuracy(config, checkpoint, corpus, name):
    model = load_pretrainer(config, checkpoint)
    return whole_word_mlm.whole_word_accuracy(model, masked[corpus, name],
                                              seq)

  source_domain = accuracy(src["config"], src["run"], "domain", "old")
  out["whole_word_windows"] = source_domain["words"]
  out["whole_word"] = {
      "source": spread([source_domain["accuracy"]]),
      "extended, step 0": spread([accuracy(new_config, dom["extended"],
                                           "domain", "new")["accuracy"]]),
      "old vocab": spread([accuracy(src["config"], runs["old vocab"][s],
                                    "domain", "old")["accuracy"]
                           for s in run.seeds]),
      "extended": spread([accuracy(new_config, runs["extended"][s],
                                   "domain", "new")["accuracy"]
                          for s in run.seeds])}
  general_source = accuracy(src["config"], src["run"], "general", "old")
  general_new = accuracy(new_config, dom["extended"], "general", "new")
  out["general_whole_word"] = {"source": general_source["accuracy"],
                               "extended": general_new["accuracy"],
                               "words": general_source["words"]}
  # The same records (the source's, old ids) through both models: the
  # only difference is the N new rows competing in the softmax.
  out["general_same_records"] = {
      name: records_mlm_accuracy(load_pretrainer(config, checkpoint),
                                 src["heldout"], source)
      for name, config, checkpoint in (
          ("source", src["config"], src["run"]),
          ("extended", new_config, dom["extended"]))}
  out["downstream"] = {name: spread([by_seed[s] for s in run.seeds])
                       for name, by_seed in downstream.items()}
  source_eval = file_io.read_json_object(
      file_io.join(src["run"], "eval_results.json"), "the source's results")
  out["source_eval"] = source_eval
  out["step0"] = {name: {s: eval_scalars(runs[name][s])[0]
                         for s in run.seeds} for name in runs}
  out["final_general"] = {
      name: spread([float(file_io.read_json_object(file_io.join(
          runs[name][s], "eval_results.json"), "results")["mlm_accuracy"])
                    for s in run.seeds]) for name in runs}
  out["goals"] = goals(out)
  return out


def goals(out: Dict) -> Dict[str, Dict]:
  """{goal: {"met": bool, "figure": str}} from the measured figures."""
  source = out["source_eval"]
  worst_loss = max(abs(step0[k] - float(source[k]))
                   for step0 in out["step0"]["old vocab"].values()
                   for k in ("mlm_loss", "sop_loss"))
  worst_accuracy = max(abs(step0[k] - float(source[k]))
                       for step0 in out["step0"]["old vocab"].values()
                       for k in ("mlm_accuracy", "sop_accuracy"))
  ppw = out["pieces_per_word"]
  cut = 1 - ppw["new"] / ppw["old"]
  # Words count punctuation marks, so no vocabulary goes below one piece
  # a word: the largest possible cut.
  bound = 1 - 1 / ppw["old"]
  down = out["downstream"]
  gain = down["extended"]["mean"] - down["old vocab"]["mean"]
  seed_spread = max(down["extended"]["range"], down["old vocab"]["range"])
  # The same seed (continued pretraining and fine-tuning) side by side.
  paired = [e - o for e, o in zip(down["extended"]["values"],
                                  down["old vocab"]["values"])]
  general = [s["mlm_accuracy"] for s in out["step0"]["extended"].values()]
  shift = max(abs(a - float(source["mlm_accuracy"])) for a in general)
  like = out["general_whole_word"]
  same = out["general_same_records"]
  same_shift = abs(same["extended"] - same["source"])
  return {
      "exact start": {
          "met": worst_loss <= 1e-5 and worst_accuracy <= 1e-6,
          "figure": f"largest loss difference {worst_loss:.1e}, accuracy "
                    f"difference {worst_accuracy:.1e} "
                    f"({len(out['step0']['old vocab'])} runs)"},
      "fewer pieces": {
          "met": cut >= 0.25,
          "figure": f"{ppw['old']:.3f} -> {ppw['new']:.3f} pieces per word "
                    f"({cut:.1%} fewer; one piece a word would be "
                    f"{bound:.1%} fewer); a SentencePiece of the same size "
                    f"trained on the domain alone: {ppw['domain_only']:.3f} "
                    f"({1 - ppw['domain_only'] / ppw['old']:.1%} fewer)"},
      "better downstream": {
          "met": gain > seed_spread,
          "figure": f"extended - old vocab = {gain * 100:+.2f} points, seed "
                    f"spread {seed_spread * 100:.2f} points; seed by seed: "
                    + ", ".join(f"{d * 100:+.1f}" for d in paired)},
      "general text barely moves": {
          "met": same_shift <= 0.005,
          "figure": "docstring MLM accuracy on the source's held-out "
                    f"records: {same['source']:.2%} (source) -> "
                    f"{same['extended']:.2%} (extended), "
                    f"{same_shift * 100:.2f} points; on records rewritten "
                    "with the extended tokenizer (they mask other pieces):"
                    f" {float(source['mlm_accuracy']):.2%} -> "
                    f"{general[0]:.2%}, {shift * 100:.2f} points; "
                    f"whole-word, same words: {like['source']:.2%} -> "
                    f"{like['extended']:.2%}"}}


def _cell(stats: Dict, scale: float = 100, digits: int = 1) -> str:
  if len(stats["values"]) == 1:
    return f"{stats['mean'] * scale:.{digits}f}"
  mean, std, span = (stats[k] * scale for k in ("mean", "std", "range"))
  return f"{mean:.{digits}f} ± {std:.{digits}f} (range {span:.{digits}f})"


def markdown(out: Dict, source, run, machine: str, command: str) -> str:
  """The section body: command, machine, settings, table, goals."""
  ppw, unk, ww = out["pieces_per_word"], out["unknown_rate"], out[
      "whole_word"]
  down = out["downstream"]
  rows = [
      ["no continued pretraining (source)", f"{ppw['old']:.3f}",
       f"{unk['old']:.3%}", _cell(ww["source"]), _cell(down["source"])],
      ["continued, old vocabulary", f"{ppw['old']:.3f}", f"{unk['old']:.3%}",
       _cell(ww["old vocab"]), _cell(down["old vocab"])],
      [f"continued, extended (+{run.new_pieces:,} pieces)",
       f"{ppw['new']:.3f}", f"{unk['new']:.3%}", _cell(ww["extended"]),
       _cell(down["extended"])]]
  table = common.markdown_table(
      ["contender", "pieces per word", "<unk> rate",
       "whole-word MLM accuracy %", "downstream dev accuracy %"], rows)
  goal_rows = [[name, "met" if g["met"] else "**not met**", g["figure"]]
               for name, g in out["goals"].items()]
  final = out["final_general"]
  corpus_text, task_text = DOMAIN_TEXT[run.domain]
  return (
      f"`{command}`; {machine}; {common.machine_label()}, {common.today()}; "
      f"{out['minutes']:.0f} min for this invocation with "
      f"{out['tool_runs']} tool runs (stages already under "
      "build/benchmarks/domain_adaptation/ are reused; their tool runs took "
      f"{out.get('stage_minutes', 0):.0f} min in all), on a machine shared "
      "with other jobs (not a speed figure).\n\n"
      f"Source: E={source.embedding_size}, H={source.hidden_size}, "
      f"{source.num_attention_heads} heads, one layer applied "
      f"{source.num_hidden_layers} times, sequence {source.max_seq_length}, "
      f"{source.vocab_size:,}-piece SentencePiece, {source.num_train_steps} "
      f"steps of {source.train_batch_size} on the standard library's "
      f"docstrings. Domain: {corpus_text}. Continued "
      f"pretraining: {run.continued_steps} steps x {run.continued_batch_size}"
      f" sequences, learning rate {run.continued_learning_rate}, "
      "`--restart_schedule`, for both vocabularies. Downstream: "
      f"{task_text}, {run.train_per_class} train and {run.dev_per_class} "
      "dev rows per class (dev from held-out files), "
      f"`tools.run_classifier` {run.finetune_steps} steps x "
      f"{run.finetune_batch_size}, learning rate "
      f"{run.finetune_learning_rate}, the dev set evaluated every "
      f"{max(1, run.finetune_steps // run.finetune_evals)} steps and the "
      "best of those evaluations reported (its `eval_results.json`), the "
      "same rule for every contender. "
      f"Seeds {', '.join(map(str, run.seeds))}"
      " (continued pretraining and fine-tuning); mean ± standard deviation "
      "(range). Pieces per word and <unk> rate: the held-out domain text "
      f"({out['heldout_words']:,} words), one tokenizer per contender. "
      f"Whole-word MLM: {out['whole_word_windows']:,} masked words of "
      "held-out domain windows, the same words masked for both "
      "vocabularies, a word right only if all its pieces are "
      "(`whole_word_mlm.py`); the extended model before its first "
      f"continued step: {_cell(out['whole_word']['extended, step 0'])}%.\n\n"
      + table + "\n\nOf the held-out domain text's pieces, "
      f"{out['punctuation_share']['old']:.0%} (old tokenizer) and "
      f"{out['punctuation_share']['new']:.0%} (extended) hold no letter or "
      "digit: SentencePiece as ALBERT trains it splits where the Unicode "
      "script changes, so no piece joins a letter to `.`, `_` or `(`, and "
      "those pieces stay whatever the vocabulary adds; they bound the cut "
      "in pieces per word. The cut against N (the tool's choice, "
      "`cut_curve`; the held-out domain text), with ALBERT's split and "
      "with `--split_by_unicode_script=false`, which lets a new piece join "
      "letters to punctuation:\n\n"
      + curve_table(out["cut_curve"], ppw["old"]) +
      "\n\nThe goals:\n\n" + common.markdown_table(
          ["goal", "", "measured"], goal_rows) +
      "\n\nDocstring (general) MLM accuracy after the continued runs: old "
      f"vocabulary {_cell(final['old vocab'])}%, extended "
      f"{_cell(final['extended'])}% (source "
      f"{float(out['source_eval']['mlm_accuracy']):.1%}).")


def write(text: str, domain: str) -> None:
  """BENCHMARKS.md's section of the domain, and the same text in the docs
  page between its markers."""
  common.update_benchmarks_md(SECTIONS[domain], text, stage="Pretraining")
  if domain != "science":
    return
  page = file_io.read_text(DOCS_PAGE)
  start, end = page.find(DOCS_START), page.find(DOCS_END)
  if start < 0 or end < start:
    raise SystemExit(f"{DOCS_PAGE} lacks the markers {DOCS_START!r} and "
                     f"{DOCS_END!r}")
  file_io.write_atomic(DOCS_PAGE, page[:start + len(DOCS_START)] + "\n\n" +
                       text.strip() + "\n\n" + page[end:])
