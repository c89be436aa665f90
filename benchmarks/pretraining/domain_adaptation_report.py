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
  downstream    test accuracy at the checkpoint dev chose (each
                contender the same number of looks), seeds paired: the
                mean of per-seed differences extended - old vocab above
                their spread (benchmarks.accuracy.beats); the signs seed
                by seed beside it, and the last checkpoint's figures.
  general text  token MLM accuracy on the source's held-out docstring
                records (the original corpus as its users hold it: old
                ids, every one valid in the extended vocabulary) AFTER
                continued pretraining, both contenders: the extended
                model's paired mean at most 0.5 points below the old
                vocabulary's. Beside it: the share of general-text words
                the extended tokenizer segments differently (what users'
                general text meets: each new piece outranks its old
                spelling), and the extended model before any update
                against the source on the same records.
"""

import json
import os
import statistics
from typing import Dict, List

from albert_common import file_io
from benchmarks import accuracy as accuracy_lib
from benchmarks import common
from benchmarks.pretraining import domain_figures
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


def spread(values: List[float]) -> Dict[str, float]:
  """mean, sample standard deviation and max - min of seed results."""
  return {"mean": statistics.mean(values),
          "std": statistics.stdev(values) if len(values) > 1 else 0.0,
          "range": max(values) - min(values), "values": list(values)}


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
         "cut_curve": domain_figures.cut_curve(
             src["spm_model"],
             [line for doc in dom["corpus"].documents("train")
              for line in doc], lines),
         "unknown_rate": {k: whole_word_mlm.unknown_rate(t, lines)
                          for k, t in tokenizers.items()},
         "heldout_words": pieces["old"]["words"],
         "punctuation_share": {k: domain_figures.punctuation_share(t, lines)
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
  out["downstream"] = {name: spread([by_seed[s]["test"]["accuracy"]
                                     for s in run.seeds])
                       for name, by_seed in downstream.items()}
  out["downstream_last"] = {name: spread([by_seed[s]["last"]["accuracy"]
                                          for s in run.seeds])
                            for name, by_seed in downstream.items()}
  out["looks"] = {name: by_seed[run.seeds[0]]["looks"]
                  for name, by_seed in downstream.items()}
  test_rows = [json.loads(line) for line in file_io.read_text(
      dom["task_test"]).splitlines() if line.strip()]
  out["test_rows"] = len(test_rows)
  out["test_labels"] = [row["label"] for row in test_rows]
  out["pieces_per_example"] = {
      name: domain_figures.pieces_per_example(
          tokenizer, [row["text"] for row in test_rows], seq)
      for name, tokenizer in tokenizers.items()}
  general_lines = [line for doc in _documents(file_io.read_text(
      src["heldout_text"])) for line in doc]
  out["segmentation_change"] = domain_figures.segmentation_change(
      old, new, general_lines)
  source_eval = file_io.read_json_object(
      file_io.join(src["run"], "eval_results.json"), "the source's results")
  out["source_eval"] = source_eval
  out["step0"] = {name: {s: eval_scalars(runs[name][s])[0]
                         for s in run.seeds} for name in runs}
  # After continued pretraining, both contenders on the same records:
  # the source's held-out docstrings, old ids.
  out["final_general"] = {
      name: spread([records_mlm_accuracy(load_pretrainer(
          src["config"] if name == "old vocab" else new_config,
          runs[name][s]), src["heldout"], source) for s in run.seeds])
      for name in runs}
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
  # The same seed (continued pretraining and fine-tuning) paired.
  better = accuracy_lib.beats(down["extended"]["values"],
                              down["old vocab"]["values"])
  final = out["final_general"]
  general = accuracy_lib.paired(final["extended"]["values"],
                                final["old vocab"]["values"])
  same = out["general_same_records"]
  change = out["segmentation_change"]
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
      "better downstream (test, paired seeds)": {
          "met": better["met"],
          "figure": "extended - old vocab, test accuracy at dev's choice: "
                    + better["figures"] + "; seed by seed: "
                    + ", ".join(f"{d * 100:+.1f}"
                                for d in better["differences"])},
      "general text barely moves": {
          "met": general["mean"] >= -0.005,
          "figure": "docstring MLM accuracy on the source's held-out "
                    "records after continued pretraining: old vocab "
                    f"{final['old vocab']['mean']:.2%}, extended "
                    f"{final['extended']['mean']:.2%}, paired "
                    f"{general['mean'] * 100:+.2f} ± "
                    f"{general['spread'] * 100:.2f} points (signs "
                    f"{general['signs']}; source "
                    f"{same['source']:.2%}, extended before any update "
                    f"{same['extended']:.2%}); the extended tokenizer "
                    f"segments {change['share']:.1%} of the general text's "
                    f"{change['words']:,} words differently"}}


def at_chance(out: Dict) -> List[str]:
  """The one-line refusal of each downstream contender whose mean test
  accuracy is within noise of the test split's majority-class rate."""
  refused = []
  for name, stats in out["downstream"].items():
    try:
      accuracy_lib.check_above_chance(f"downstream {name}", stats["mean"],
                                      out["test_labels"])
    except accuracy_lib.ChanceError as e:
      refused.append(str(e))
  return refused


def _cell(stats: Dict, scale: float = 100, digits: int = 1) -> str:
  if len(stats["values"]) == 1:
    return f"{stats['mean'] * scale:.{digits}f}"
  mean, std, span = (stats[k] * scale for k in ("mean", "std", "range"))
  return f"{mean:.{digits}f} ± {std:.{digits}f} (range {span:.{digits}f})"


def markdown(out: Dict, source, run, machine: str, command: str) -> str:
  """The section body: command, machine, settings, table, goals."""
  ppw, unk, ww = out["pieces_per_word"], out["unknown_rate"], out[
      "whole_word"]
  down, last = out["downstream"], out["downstream_last"]
  per_example = out["pieces_per_example"]

  def example_cell(name):
    p = per_example[name]
    return f"{p['mean']:.1f} ({p['truncated']:.0%} cut)"
  rows = [
      ["no continued pretraining (source)", f"{ppw['old']:.3f}",
       f"{unk['old']:.3%}", _cell(ww["source"]), _cell(down["source"]),
       _cell(last["source"]), example_cell("old")],
      ["continued, old vocabulary", f"{ppw['old']:.3f}", f"{unk['old']:.3%}",
       _cell(ww["old vocab"]), _cell(down["old vocab"]),
       _cell(last["old vocab"]), example_cell("old")],
      [f"continued, extended (+{run.new_pieces:,} pieces)",
       f"{ppw['new']:.3f}", f"{unk['new']:.3%}", _cell(ww["extended"]),
       _cell(down["extended"]), _cell(last["extended"]),
       example_cell("new")]]
  table = common.markdown_table(
      ["contender", "pieces per word", "<unk> rate",
       "whole-word MLM accuracy %",
       "downstream test accuracy % (checkpoint dev chose)",
       "downstream test accuracy %, last checkpoint",
       f"task pieces per example (cut at {source.max_seq_length - 2})"],
      rows)
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
      f"{task_text}, {run.train_per_class} train, {run.dev_per_class} dev "
      f"and {run.dev_per_class} test rows per class (dev and test from "
      f"held-out files; test: {out['test_rows']} rows), "
      f"`tools.run_classifier` {run.finetune_steps} steps x "
      f"{run.finetune_batch_size}, learning rate "
      f"{run.finetune_learning_rate}, a checkpoint every "
      f"{-(-run.finetune_steps // run.finetune_evals)} steps, all "
      f"{run.finetune_evals} kept and scored on dev and test: the figure is "
      "test accuracy at the checkpoint dev chose, beside the last "
      "checkpoint's; every contender had "
      + ", ".join(f"{name} {n}" for name, n in out["looks"].items())
      + " looks at dev. "
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
      + domain_figures.curve_table(out["cut_curve"], ppw["old"]) +
      "\n\nThe goals:\n\n" + common.markdown_table(
          ["goal", "", "measured"], goal_rows) +
      "\n\nDocstring (general) MLM accuracy after the continued runs, "
      "both on the source's held-out records (old ids): old "
      f"vocabulary {_cell(final['old vocab'])}%, extended "
      f"{_cell(final['extended'])}% (source "
      f"{float(out['source_eval']['mlm_accuracy']):.1%}). The extended "
      "tokenizer segments "
      f"{out['segmentation_change']['share']:.1%} of the general text's "
      f"{out['segmentation_change']['words']:,} words differently from the "
      "old one (each new piece outranks its old spelling, so general text "
      "is re-segmented wherever that spelling occurs); pieces per task "
      "example are given beside the accuracy because fine-tuning cuts at "
      f"{source.max_seq_length - 2} pieces, and the extended tokenizer fits "
      "more words into them.")


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
