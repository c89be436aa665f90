"""The official google-research/albert `create_pretraining_data.py`, run as
the data-creation benchmark's peer: the same corpus, SentencePiece model and
instance settings as ours, in a fresh process, timed from after its imports
(as ours is).

The script is not part of this project: give a checkout of
google-research/albert (or the `albert` folder the PyPI package
`albert-tensorflow` installs) with `--official_dir`, or set
ALBERT_OFFICIAL_DIR. It imports `from albert import tokenization`, so the
folder is put on the path as a package named `albert` (a symlink in a temp
dir), whatever its own name; it needs TensorFlow's compat.v1 (TF 2.20 has
it), six, sentencepiece and tensorflow_hub.

Without it, the benchmark writes no first-table row (a peer figure must be
measured in the same run): `python -m benchmarks.data.creation --write`
refuses in one line saying how to get the script (HOW_TO_GET).
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, Optional

OFFICIAL_DIR_ENV = "ALBERT_OFFICIAL_DIR"
SCRIPT = "create_pretraining_data.py"
NEEDED = (SCRIPT, "tokenization.py")

HOW_TO_GET = (
    "git clone https://github.com/google-research/albert /path/to/albert "
    f"and give --official_dir=/path/to/albert or set {OFFICIAL_DIR_ENV}="
    "/path/to/albert (it needs six, sentencepiece and tensorflow_hub)")

_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])  # holds `albert`, the checkout
from albert import create_pretraining_data as official
import tensorflow.compat.v1 as tf
official.FLAGS(["create_pretraining_data"] + sys.argv[2:])
tf.logging.set_verbosity(tf.logging.WARN)
start, cpu = time.perf_counter(), sum(os.times()[:2])
official.main(None)
seconds, cpu = time.perf_counter() - start, sum(os.times()[:2]) - cpu
output = official.FLAGS.output_file
instances = sum(1 for _ in tf.io.tf_record_iterator(output))
with open("/proc/self/status") as f:
  rss = next(int(line.split()[1]) / 1024 for line in f
             if line.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu,
                  "instances": instances,
                  "rss_mb": rss}))
"""


class OfficialScriptError(ValueError):
  """The official script is not where it was said to be, or failed."""


def official_dir(flag_value: Optional[str]) -> Optional[str]:
  """The checkout to run: the flag's value, else $ALBERT_OFFICIAL_DIR,
  else None. Raises OfficialScriptError naming the value when the folder
  lacks the script."""
  path = flag_value or os.environ.get(OFFICIAL_DIR_ENV) or None
  if path is None:
    return None
  missing = [name for name in NEEDED
             if not os.path.isfile(os.path.join(path, name))]
  if missing:
    source = ("--official_dir" if flag_value else f"${OFFICIAL_DIR_ENV}")
    raise OfficialScriptError(
        f"{source}={path}: no {' or '.join(missing)} there (give a "
        "checkout of google-research/albert)")
  return os.path.abspath(path)


def official_flags(options, dupe_factor: int, random_seed: int = 12345
                   ) -> Dict[str, object]:
  """The official flags of our InstanceOptions `options` (every field of
  the official's name: the same settings by construction)."""
  names = ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob",
           "short_seq_prob", "ngram", "favor_shorter_ngram",
           "do_whole_word_mask", "random_next_sentence")
  values = dataclasses.asdict(options)
  flags = {name: values[name] for name in names}
  flags.update(dupe_factor=dupe_factor, random_seed=random_seed,
               do_lower_case=True)
  return flags


def run_official(checkout: str, corpus: str, spm_model: str, output: str,
                 flags: Dict[str, object]) -> Dict[str, float]:
  """Runs the script on `corpus`; {"seconds", "cpu_seconds", "instances",
  "rss_mb"}.
  Raises OfficialScriptError with its last error line if it fails."""
  vocab = os.path.splitext(spm_model)[0] + ".vocab"
  if not os.path.isfile(vocab):
    raise OfficialScriptError(
        f"{spm_model}: the official script needs its .vocab beside it "
        f"({vocab})")
  os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
  argv = [f"--input_file={corpus}", f"--output_file={output}",
          f"--spm_model_file={spm_model}", f"--vocab_file={vocab}"] + [
              f"--{k}={v}" for k, v in flags.items()]
  with tempfile.TemporaryDirectory(prefix="official_albert_") as parent:
    os.symlink(checkout, os.path.join(parent, "albert"))
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, parent] + argv, capture_output=True,
        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if result.returncode:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    raise OfficialScriptError(
        f"the official {SCRIPT} in {checkout} failed: "
        f"{lines[-1] if lines else 'exit ' + str(result.returncode)}")
  return json.loads(result.stdout.strip().splitlines()[-1])
