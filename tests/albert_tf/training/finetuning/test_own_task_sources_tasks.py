"""run_squad, run_multiple_choice, run_ner and run_race take our own run
dir and our own export as --init_checkpoint, head included: --do_eval
alone (no config nor vocabulary flag) scores what the run scored, to 1e-6;
another task's run is one line."""

import json

import pytest

from tests.albert_tf.checkpoints import tool_sources_kit as sources
from tests.albert_tf.training.finetuning import own_data_kit as kit
from tests.albert_tf.training.finetuning.test_length_buckets_tasks import (
  _write_race,
)
from tests.albert_tf.training.finetuning.test_squad_finetuning import _filler
from tests.albert_tf.training.finetuning.test_squad_finetuning import (
  _squad_json,
)
from tests.albert_tf.training.finetuning.test_task_model_sources_ner import TAGS
from tests.albert_tf.training.finetuning.test_task_model_sources_ner import (
  _sentences,
)
from tests.scripts import ner_data

pytest.importorskip("torch")

SEQ = 64
# One update (a run dir with a checkpoint), then its dev evaluation.
TRAIN = ["--do_train", "--train_step=1", "--warmup_step=0",
         "--save_checkpoints_steps=1", "--train_batch_size=4", "--seed=0"]


_run_tool = sources.run_tool
_metrics = sources.eval_metrics


@pytest.fixture(scope="module")
def runs(tmp_path_factory, english_corpus, spm_model):
  """Per tool: a run of ours from a transformers folder (1 update, its dev
  evaluation, its export), and the tool's data flags."""
  root = tmp_path_factory.mktemp("own_task_runs")
  squad = root / "dev-v1.json"
  squad.write_text(json.dumps(_squad_json(_filler(english_corpus), 12,
                                          False, 1)))
  choices = kit.write_jsonl(root / "mc.jsonl", kit.choice_rows(
      kit.corpus_lines(english_corpus, 60, seed=1), 3, 5))
  ner_dev = ner_data.write_conll(root / "ner.txt", _sentences())
  _write_race(str(root / "race" / "RACE"), english_corpus,
              {"train": 2, "dev": 4})
  tools = {
      "run_squad": ("AlbertForQuestionAnswering", {},
                    [f"--train_file={squad}", f"--predict_file={squad}",
                     "--doc_stride=32", "--max_query_length=16"]),
      "run_multiple_choice": ("AlbertForMultipleChoice", {},
                              [f"--train_file={choices}",
                               f"--dev_file={choices}"]),
      "run_ner": ("AlbertForTokenClassification",
                  dict(num_labels=len(TAGS), id2label=dict(enumerate(TAGS))),
                  [f"--train_file={ner_dev}", f"--dev_file={ner_dev}"]),
      "run_race": ("AlbertForMultipleChoice", {},
                   [f"--data_dir={root / 'race'}", "--max_qa_length=16"]),
  }
  out = {"root": root}
  for tool, (cls, kwargs, data) in tools.items():
    folder = root / f"hf_{tool}"
    sources.hf_folder(folder, cls, spm_model, max_position_embeddings=SEQ,
                      **kwargs)
    run = root / f"run_{tool}"
    assert _run_tool(tool, f"--init_checkpoint={folder}", *data, *TRAIN,
                     "--do_eval", f"--output_dir={run}",
                     f"--max_seq_length={SEQ}", "--length_buckets=none",
                     f"--export_dir={root / f'export_{tool}'}") == 0, tool
    out[tool] = [a for a in data if not a.startswith("--train_file")]
  return out


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["run_squad", "run_multiple_choice",
                                  "run_ner", "run_race"])
def test_our_run_and_export_are_scored_as_they_are(runs, tool, tmp_path,
                                                   caplog):
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  root = runs["root"]
  want = _metrics(root / f"run_{tool}")
  assert want
  for name in ("run", "export"):
    out = tmp_path / name
    assert _run_tool(tool, f"--init_checkpoint={root / f'{name}_{tool}'}",
                     *runs[tool], "--do_eval", f"--output_dir={out}",
                     f"--max_seq_length={SEQ}",
                     "--length_buckets=none") == 0, name
    got = _metrics(out)
    assert sorted(got) == sorted(want), name
    for key in want:
      assert got[key] == pytest.approx(want[key], abs=1e-6), (name, key)
  kind = {"run_squad": "span", "run_multiple_choice": "multiple_choice",
          "run_ner": "token_classifier",
          "run_race": "multiple_choice"}[tool]
  assert (f"{kind} head from {kind}/dense/bias, {kind}/dense/kernel" in
          caplog.text)


@pytest.mark.slow
def test_another_tasks_run_is_one_line(runs, tmp_path, capsys):
  """Our QA run to run_multiple_choice, our multiple-choice export to
  run_squad: exit 1, one error line, nothing written."""
  root = runs["root"]
  for tool, source in (("run_multiple_choice", root / "run_run_squad"),
                       ("run_squad", root / "export_run_multiple_choice")):
    out = tmp_path / f"bad_{tool}"
    capsys.readouterr()
    code = _run_tool(tool, f"--init_checkpoint={source}", *runs[tool],
                     f"--output_dir={out}", "--do_eval",
                     f"--max_seq_length={SEQ}")
    assert "--init_head=false" in sources.error_line(capsys, code, out)
