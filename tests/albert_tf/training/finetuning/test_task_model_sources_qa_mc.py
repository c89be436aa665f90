"""run_squad and run_multiple_choice start from Hugging Face task folders
(AlbertForQuestionAnswering, AlbertForMultipleChoice): the folder alone is
enough, its head is restored (the library tests compare its logits with
PyTorch's), SQuAD v2.0 takes BERT's null score for a span head, and the
other task's head is one line."""

import json

import pytest

from tests.albert_tf.checkpoints import tool_sources_kit as sources
from tests.albert_tf.training.finetuning import own_data_kit as kit
from tests.albert_tf.training.finetuning.test_squad_finetuning import _filler
from tests.albert_tf.training.finetuning.test_squad_finetuning import (
  _squad_json,
)

pytest.importorskip("torch")

SEQ = 64
_run_tool = sources.run_tool


@pytest.fixture(scope="module")
def folders(tmp_path_factory, english_corpus, spm_model):
  root = tmp_path_factory.mktemp("hf_qa_mc")
  out = {"root": root}
  for name, cls in (("qa", "AlbertForQuestionAnswering"),
                    ("mc", "AlbertForMultipleChoice")):
    sources.hf_folder(root / name, cls, spm_model,
                      max_position_embeddings=SEQ)
  words = _filler(english_corpus)
  for v2 in (False, True):
    path = root / f"dev-v{2 if v2 else 1}.json"
    path.write_text(json.dumps(_squad_json(words, 12, v2, 1)))
    out[v2] = str(path)
  rows = kit.choice_rows(kit.corpus_lines(english_corpus, 60, seed=1), 3, 5)
  out["choices"] = kit.write_jsonl(root / "mc.jsonl", rows)
  return out


def test_squad_from_a_hf_qa_folder(folders, tmp_path, caplog):
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  for v2 in (False, True):
    out = tmp_path / f"v{2 if v2 else 1}"
    args = [f"--init_checkpoint={folders['root'] / 'qa'}",
            f"--predict_file={folders[v2]}", f"--output_dir={out}",
            "--do_eval", f"--max_seq_length={SEQ}", "--doc_stride=32",
            "--max_query_length=16"]
    if v2:
      args.append("--version_2_with_negative")
    assert _run_tool("run_squad", *args) == 0
    assert (out / "predictions.json").exists()
    assert "span head from qa_outputs.bias, qa_outputs.weight" in caplog.text
  assert "--null_score=cls: --init_checkpoint holds a start/end span head" \
      in caplog.text


def test_multiple_choice_from_a_hf_folder_and_wrong_heads(folders, tmp_path,
                                                          caplog, capsys):
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  out = tmp_path / "mc"
  assert _run_tool("run_multiple_choice",
                   f"--init_checkpoint={folders['root'] / 'mc'}",
                   f"--dev_file={folders['choices']}", f"--output_dir={out}",
                   "--do_eval", "--max_seq_length=32") == 0
  assert "multiple_choice head from classifier.bias, classifier.weight" in (
      caplog.text)
  assert json.loads((out / "eval_results.json").read_text())[
      "num_examples"] == 20
  # A QA folder to run_multiple_choice, an MC folder to run_squad.
  for tool, folder, args in (
      ("run_multiple_choice", "qa", [f"--dev_file={folders['choices']}"]),
      ("run_squad", "mc", [f"--predict_file={folders[False]}"])):
    bad_out = tmp_path / f"bad_{tool}"
    capsys.readouterr()
    code = _run_tool(tool, f"--init_checkpoint={folders['root'] / folder}",
                     f"--output_dir={bad_out}", "--do_eval",
                     "--max_seq_length=32", *args)
    assert "--init_head=false" in sources.error_line(capsys, code, bad_out)
