"""A run's control flows one way: tool -> settings -> task -> runner.

The tools run one after the other in one subprocess (one TensorFlow import)
under a trace hook (tests/scripts/control_flow_script.py) that records every
call between our files. Asserted for run_classifier and run_pretraining:
  - nothing below the tool calls back into tools/ (no round trip);
  - when the runner starts training, the stack from the tool's main() holds
    at most 8 of our files, each once: the tool's, then the library's;
  - the config and the vocabulary are each read once.
"""

import json
import os
import subprocess
import sys

import pytest

from albert_tf.config import AlbertConfig

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
MAX_SPINE_FILES = 8


def _trace(folder, *runs):
  """{tool: trace} of `runs` ([train function, "tools.NAME", flags...]),
  run in that order in one process."""
  out, runs_file = str(folder / "traces.json"), folder / "runs.json"
  runs_file.write_text(json.dumps(runs))
  result = subprocess.run(
      [sys.executable,
       os.path.join(ROOT, "tests", "scripts", "control_flow_script.py"),
       out, str(runs_file)], cwd=ROOT, capture_output=True,
      text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  with open(out) as f:
    return json.load(f)


def _tiny_config(path):
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=64
               ).to_json_file(path)
  return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory, spm_model, pretraining_records):
  """{tool: trace} of a 2-step run of run_classifier and run_pretraining."""
  root = tmp_path_factory.mktemp("flow")
  config = _tiny_config(str(root / "albert_config.json"))
  glue = root / "SST-2"
  glue.mkdir()
  rows = "".join(f"the film is {w}\t{i % 2}\n"
                 for i, w in enumerate(["good", "bad"] * 20))
  for split in ("train", "dev"):
    (glue / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
  runs = _trace(
      root,
      ["train", "tools.run_classifier", "--task_name=SST-2",
       f"--data_dir={glue}", f"--albert_config_file={config}",
       f"--spm_model_file={spm_model}", f"--output_dir={root / 'glue_run'}",
       "--do_train", "--do_eval", "--max_seq_length=32", "--train_step=2",
       "--train_batch_size=4", "--eval_batch_size=8",
       "--save_checkpoints_steps=2", "--iterations_per_loop=1"],
      ["train_loop_begin", "tools.run_pretraining",
       f"--input_file={pretraining_records['path']}",
       f"--output_dir={root / 'pretraining_run'}",
       f"--albert_config_file={config}", "--train_batch_size=4",
       "--max_seq_length=32", "--max_predictions_per_seq=5",
       "--num_train_steps=2", "--num_warmup_steps=1",
       "--save_checkpoints_steps=2", "--iterations_per_loop=1"])
  classifier = runs["tools.run_classifier"]
  pretraining = runs["tools.run_pretraining"]
  return dict(run_classifier=classifier, run_pretraining=pretraining,
              config=config, spm_model=spm_model)


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["run_classifier", "run_pretraining"])
def test_nothing_below_the_tool_calls_back_into_tools(traces, tool):
  back = [edge for edge in traces[tool]["edges"]
          if edge[1].startswith("tools") and not edge[0].startswith("tools")]
  assert not back, back


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["run_classifier", "run_pretraining"])
def test_the_path_to_the_runner_is_short_and_one_way(traces, tool):
  spine = traces[tool]["spine"]
  assert spine, "the runner's train() was never called"
  assert len(spine) <= MAX_SPINE_FILES, spine
  assert len(set(spine)) == len(spine), spine  # no file visited twice
  assert spine[0] == f"tools/{tool}.py", spine  # its main()
  assert all(path.startswith("albert_tf/") for path in spine[1:]), spine
  assert spine[-1].endswith("runner.py"), spine


@pytest.mark.slow
def test_config_and_vocabulary_are_read_once_per_run(traces):
  for tool, files in (("run_classifier", ("config", "spm_model")),
                      ("run_pretraining", ("config",))):
    reads = traces[tool]["reads"]
    for name in files:
      assert reads.get(traces[name]) == 1, (tool, name, reads)
