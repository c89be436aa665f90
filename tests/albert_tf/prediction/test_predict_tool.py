"""`python -m tools.predict`'s one-line errors: a bad row names file:line
and leaves nothing written; the export's kind and columns are checked
before any work."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _predict(*args):
  result = subprocess.run([sys.executable, "-m", "tools.predict", *args],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
  return result.returncode, result.stderr.strip().splitlines()


@pytest.fixture
def pair_inputs(tmp_path):
  path = tmp_path / "in.jsonl"
  path.write_text('{"a": "x", "b": "y"}\n{"a": "x", "b": "y"}\n'
                  '{"a": "x", "b": \n{"a": "x", "b": "y"}\n')
  return str(path)


def test_a_bad_row_is_one_line_and_nothing_is_written(fake_exports,
                                                      pair_inputs, tmp_path):
  out = str(tmp_path / "out")
  code, err = _predict(f"--model={fake_exports['classifier']}",
                       f"--input_file={pair_inputs}", f"--output_dir={out}",
                       "--text_column=a", "--text_b_column=b")
  assert code == 1 and len(err) == 1, err
  assert err[0].startswith(f"error: {pair_inputs}:3: not JSON (")
  assert err[0].endswith("(--skip_bad_rows writes such rows to a rejects "
                         "file)")
  assert not os.path.exists(out)


@pytest.mark.parametrize("model,flags,message", [
    ("classifier", ["--text_column=a"], "is a sentence-pair model (text_a, "
     "text_b); give --text_b_column"),
    ("classifier", ["--text_column=c", "--text_b_column=b"],
     ":1: no column 'c' (--text_column); the columns there: a, b"),
    ("race", [], "tools.predict does not serve this export yet "
     "(serving_default(article, options, question)"),
    ("export/preprocessor", [], "is the preprocessor of an export"),
    ("classifier", ["--text_column=a", "--text_b_column=b",
                    "--runtime=onnx"],
     "/classifier/onnx/model.onnx does not exist; make it with: python -m "
     "tools.export_onnx --saved_model="),
    ("squad", ["--runtime=litert"], "/squad/litert/model.tflite does not "
     "exist; make it with: python -m tools.export_tflite --saved_model="),
])
def test_wrong_model_or_column_is_one_line(fake_exports, pair_inputs,
                                           tmp_path, model, flags, message):
  out = str(tmp_path / "out")
  code, err = _predict(f"--model={fake_exports[model]}",
                       f"--input_file={pair_inputs}", f"--output_dir={out}",
                       *flags)
  assert code == 1 and len(err) == 1 and message in err[0], err
  assert not os.path.exists(out)
