"""run_ner scores a Hugging Face AlbertForTokenClassification folder as it
is: its config, spiece.model and id2label (not in sorted order) are all the
tool is given; each word's predicted tag is PyTorch's argmax at the word's
first piece."""

import json

import numpy as np
import pytest

from tests.albert_tf.checkpoints import tool_sources_kit as sources
from tests.scripts import ner_data

torch = pytest.importorskip("torch")

SEQ = 64
TAGS = ["I-PER", "O", "B-LOC", "B-PER", "I-LOC", "B-ORG", "I-ORG"]


def _sentences():
  """Short English sentences whose tags are all among TAGS."""
  sentences = [s for s in ner_data.english_sentences(40, 1, long_every=1000)
               if set(s[1]) <= set(TAGS)]
  assert len(sentences) >= 20
  return sentences[:20]


def test_hf_token_classifier_is_scored_as_it_is(tmp_path, spm_model):
  from data_pipeline.tasks.ner.features import word_piece_ids
  from data_pipeline.tokenization.factory import make_tokenizer
  folder = tmp_path / "hf_ner"
  torch_model = sources.hf_folder(
      folder, "AlbertForTokenClassification", spm_model, seed=5,
      max_position_embeddings=SEQ, num_labels=len(TAGS),
      id2label=dict(enumerate(TAGS)))
  sentences = _sentences()
  dev = ner_data.write_conll(tmp_path / "dev.txt", sentences)
  out = tmp_path / "out"
  assert sources.run_tool("run_ner", f"--init_checkpoint={folder}",
                   f"--dev_file={dev}", f"--output_dir={out}", "--do_eval",
                   f"--max_seq_length={SEQ}", "--length_buckets=none") == 0
  labels = json.loads((out / "labels.json").read_text())
  assert labels["labels"] == TAGS  # the head's order
  tokenizer = make_tokenizer(spm_model)
  want = []
  for words, _ in sentences:
    pieces = word_piece_ids(tokenizer, words)
    flat = [p for word in pieces for p in word]
    assert len(flat) <= SEQ - 2
    ids = [tokenizer.cls_id] + flat + [tokenizer.sep_id]
    firsts = np.cumsum([1] + [len(p) for p in pieces[:-1]])
    with torch.no_grad():
      logits = torch_model(input_ids=torch.tensor([ids])).logits[0].numpy()
    want.append([TAGS[i] for i in logits[firsts].argmax(-1)])
  got, sentence = [], []
  for line in (out / "dev_predictions.txt").read_text().splitlines():
    if line.startswith("-DOCSTART-"):
      continue
    if not line.strip():
      if sentence:
        got.append(sentence)
      sentence = []
      continue
    sentence.append(line.split()[-1])
  if sentence:
    got.append(sentence)
  assert got == want
