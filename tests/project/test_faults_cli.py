"""Fault suite, bad input through the command-line tools (a
representative subset): exit status 1, one "error:" line on stderr naming
the file, flag or value, no traceback, nothing half-written.

Killed runs: test_faults_killed_runs.py; the same errors in process:
test_faults_in_process.py.
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.project.fault_kit import PREDS
from tests.project.fault_kit import ROOT
from tests.project.fault_kit import SEQ
from tests.project.fault_kit import env
from tests.project.fault_kit import latest_step

# --- bad input through the command-line tools --------------------------------
#
# One process per case (each pays the TensorFlow import), two at a time.


def _bad_input_cases(root, records, spm_model, config_file, sst2_dir):
  """name -> (module, args, message regex)."""
  missing = os.path.join(root, "missing.txt")
  non_utf8 = os.path.join(root, "latin1.txt")
  with open(non_utf8, "wb") as f:
    f.write(b"A first line.\nCaf\xe9 in Latin-1.\n\nAnother document.\n")
  a_file = os.path.join(root, "a_file")
  with open(a_file, "w") as f:
    f.write("not a directory")
  corrupt = os.path.join(root, "corrupt.tfrecord")
  with open(records, "rb") as f:
    data = bytearray(f.read())
  data[len(data) // 2] ^= 0xFF  # past the first record: found while training
  with open(corrupt, "wb") as f:
    f.write(bytes(data))
  groups = os.path.join(root, "groups.json")
  with open(config_file) as f:
    config = json.load(f)
  with open(groups, "w") as f:
    json.dump(dict(config, num_hidden_groups=3), f)
  bad_tsv = os.path.join(root, "bad_glue")
  os.makedirs(bad_tsv)
  shutil.copy(os.path.join(sst2_dir, "dev.tsv"), bad_tsv)
  with open(os.path.join(bad_tsv, "train.tsv"), "w") as f:
    f.write("sentence\tlabel\na fine row\t1\none\ttoo\tmany\n")
  plain_dir = os.path.join(root, "plain_dir")
  os.makedirs(plain_dir)

  data = ("tools.create_pretraining_data", f"--spm_model_file={spm_model}",
          f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDS}",
          "--dupe_factor=1", "--num_workers=1", "--noprogress")
  pretrain = ("tools.run_pretraining", f"--max_seq_length={SEQ}",
              f"--max_predictions_per_seq={PREDS}", "--train_batch_size=8",
              "--eval_batch_size=8", "--num_train_steps=20",
              "--num_warmup_steps=2", "--save_checkpoints_steps=10",
              "--iterations_per_loop=10", "--seed=1")
  classify = ("tools.run_classifier", "--task_name=SST-2",
              f"--spm_model_file={spm_model}", "--do_train",
              f"--max_seq_length={SEQ}", "--train_batch_size=16",
              "--train_step=10", "--warmup_step=1",
              "--save_checkpoints_steps=10", "--iterations_per_loop=5",
              "--seed=1")
  out = lambda name: os.path.join(root, name)  # noqa: E731
  return {
      "missing_corpus": (*data, f"--input_file={missing}",
                         f"--output_file={out('a.tfrecord')}",
                         "--input_file: no such file: .*missing.txt"),
      "non_utf8_corpus": (*data, f"--input_file={non_utf8}",
                          f"--output_file={out('b.tfrecord')}",
                          r"latin1.txt:2: not UTF-8 .*--skip_non_utf8_lines"),
      "data_unwritable_output": (
          *data, f"--input_file={records}",
          f"--output_file={a_file}/sub/c.tfrecord",
          "--output_file=.*a_file/sub/c.tfrecord: cannot create"),
      "pretraining_corrupt_record": (
          *pretrain, f"--input_file={records}", f"--eval_file={corrupt}",
          "--max_eval_steps=-1", f"--output_dir={out('run_corrupt')}",
          f"--albert_config_file={config_file}",
          r"--eval_file: .*corrupt.tfrecord: .*corrupted record"),
      "pretraining_bad_groups": (
          *pretrain, f"--input_file={records}", f"--output_dir={out('g')}",
          f"--albert_config_file={groups}",
          r"groups.json: num_hidden_layers \(2\) must be divisible by "
          r"num_hidden_groups \(3\)"),
      "pretraining_nan": (
          *pretrain, f"--input_file={records}", "--learning_rate=1e6",
          f"--output_dir={out('run_nan')}",
          f"--albert_config_file={config_file}",
          "training loss is nan at step 10 .*--learning_rate"),
      "glue_bad_row": (
          *classify, f"--data_dir={bad_tsv}", f"--output_dir={out('ft')}",
          f"--albert_config_file={config_file}",
          r"bad_glue/train.tsv:3: expected 2 tab-separated columns, found 3"),
      "init_savedmodel_not_a_savedmodel": (
          *classify, f"--data_dir={sst2_dir}", f"--output_dir={out('ft2')}",
          f"--albert_config_file={config_file}",
          f"--init_savedmodel={plain_dir}",
          "plain_dir is not a SavedModel"),
  }


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory, pretraining_records, spm_model,
                config_file, sst2_dir):
  root = str(tmp_path_factory.mktemp("bad_cli"))
  cases = _bad_input_cases(root, pretraining_records["path"], spm_model,
                           config_file, sst2_dir)

  def run(item):
    name, (module, *args, _) = item
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                            env=env(), capture_output=True, text=True,
                            timeout=300)
    return name, result

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    results = dict(pool.map(run, cases.items()))
  return {name: (results[name], cases[name][-1], root) for name in cases}


CLI_CASES = ("missing_corpus", "non_utf8_corpus", "data_unwritable_output",
             "pretraining_corrupt_record", "pretraining_bad_groups",
             "pretraining_nan", "glue_bad_row",
             "init_savedmodel_not_a_savedmodel")


@pytest.mark.slow
@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_bad_input_is_one_clear_error(cli_results, case):
  result, pattern, root = cli_results[case]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.returncode == 1, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert re.search(pattern, errors[0]), errors[0]
  if case == "pretraining_nan":
    # Stopped without saving: the last checkpoint is the good initial one.
    assert latest_step(os.path.join(root, "run_nan")) == 0
  if case in ("missing_corpus", "non_utf8_corpus"):
    assert not [f for f in os.listdir(root)
                if f.lstrip(".").startswith(("a.tfrecord", "b.tfrecord"))]

