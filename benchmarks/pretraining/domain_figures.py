"""The domain benchmark's accuracy and tokenization figures, pure enough to
test on crafted inputs:

  split_dev_test      held-out task rows -> dev (selection) and test
                      (reported), alternating within each label
  finetune_looks      a run_classifier run's kept checkpoints, each scored
                      on dev and test (benchmarks.accuracy.select picks on
                      dev, reports test and the last checkpoint's)
  segmentation_change the share of general-text words the extended
                      tokenizer segments differently from the old one: a
                      new piece outranks its old spelling, so old text is
                      re-segmented wherever that spelling occurs
  pieces_per_example  pieces per task example and the share cut by the
                      fine-tuning length (the extended tokenizer fits more
                      words into the same pieces)
  cut_curve, punctuation_share  the cut in pieces per word against N, and
                      the pieces no extension can join
"""

from typing import Dict, List, Sequence

from albert_common import file_io
from benchmarks import common

# [CLS] and [SEP] of a single-text example.
SPECIAL_PIECES = 2


def split_dev_test(rows: Sequence[Dict[str, str]]
                   ) -> Dict[str, List[Dict[str, str]]]:
  """{"dev", "test"}: a label's rows alternate dev, test, dev, ... in
  their order (the rows come shuffled; each split has every label)."""
  seen, out = {}, {"dev": [], "test": []}
  for row in rows:
    n = seen.get(row["label"], 0)
    seen[row["label"]] = n + 1
    out["dev" if n % 2 == 0 else "test"].append(row)
  return out


def words_of(pieces: Sequence[str]) -> List[tuple]:
  """Pieces grouped into words: a word starts at a piece with the
  word-start mark ("▁")."""
  words = []
  for piece in pieces:
    if piece.startswith("\u2581") or not words:
      words.append([piece])
    else:
      words[-1].append(piece)
  return [tuple(w) for w in words]


def segmentation_change(old, new, lines: Sequence[str]) -> Dict:
  """{"words", "changed", "share", "pieces_old", "pieces_new"} of `lines`
  tokenized by `old` and `new` (tokenize(text) -> pieces): the words whose
  pieces differ. SentencePiece does not join pieces across whitespace, so
  the two segmentations have the same words."""
  words = changed = pieces_old = pieces_new = 0
  for line in lines:
    a, b = old.tokenize(line), new.tokenize(line)
    pieces_old, pieces_new = pieces_old + len(a), pieces_new + len(b)
    wa, wb = words_of(a), words_of(b)
    if len(wa) != len(wb):  # not expected: count the line's words changed
      words += max(len(wa), len(wb))
      changed += max(len(wa), len(wb))
      continue
    words += len(wa)
    changed += sum(x != y for x, y in zip(wa, wb))
  return dict(words=words, changed=changed, share=changed / max(words, 1),
              pieces_old=pieces_old, pieces_new=pieces_new)


def pieces_per_example(tokenizer, texts: Sequence[str],
                       max_seq_length: int) -> Dict[str, float]:
  """{"mean": pieces per example before truncation, "truncated": the
  share of examples longer than max_seq_length - 2 pieces (cut by
  fine-tuning), "kept": mean pieces fine-tuning keeps}."""
  room = max_seq_length - SPECIAL_PIECES
  lengths = [len(tokenizer.tokenize(t)) for t in texts]
  n = max(len(lengths), 1)
  return dict(mean=sum(lengths) / n,
              truncated=sum(x > room for x in lengths) / n,
              kept=sum(min(x, room) for x in lengths) / n)


def finetune_looks(run_dir: str, dev_file: str, test_file: str,
                   spm_model: str, seq_length: int, looks: int
                   ) -> List[Dict]:
  """One look per checkpoint the run kept, `looks` of them (else
  benchmarks.accuracy.LooksError), scored as distillation_eval scores
  (the same packing as fine-tuning)."""
  from benchmarks.finetuning import distillation_eval
  splits = {name: distillation_eval.split_inputs(run_dir, path, spm_model,
                                                 seq_length)
            for name, path in (("dev", dev_file), ("test", test_file))}
  return distillation_eval.classifier_looks(run_dir, splits, looks=looks)


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
