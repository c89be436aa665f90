"""`--help` of every command-line tool: the flags the README and the docs
pages use for it, and the module docstring's usage example with its line
breaks."""

import ast
import concurrent.futures
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
TOOLS = sorted(
    name[:-3] for name in os.listdir(os.path.join(ROOT, "tools"))
    if name.endswith(".py") and "cli.run(" in open(
        os.path.join(ROOT, "tools", name), encoding="utf-8").read())


def documented_files():
  """README.md and every page of the docs site."""
  docs = os.path.join(ROOT, "docs")
  return [os.path.join(ROOT, "README.md")] + sorted(
      os.path.join(docs, name) for name in os.listdir(docs)
      if name.endswith(".md"))


def documented_flags():
  """{tool: set of flag names} of the `python -m tools.X` commands in the
  ```sh blocks of the README and the docs pages (continuation lines
  joined). Options after `--runner` are Apache Beam's, passed through by
  create_pretraining_data (its --help says so), not the tool's."""
  blocks = []
  for path in documented_files():
    with open(path, encoding="utf-8") as f:
      blocks += re.findall(r"```sh\n(.*?)```", f.read(), re.S)
  used = {}
  for block in blocks:
    text = re.sub(r"\\\n", " ", block)
    for line in text.splitlines():
      line = line.split("#", 1)[0]
      for command in re.findall(r"python -m tools\.(\w+)(.*)", line):
        tool, args = command
        args = re.split(r"(?<!\S)--runner\b", args)[0]
        used.setdefault(tool, set()).update(
            re.findall(r"(?<!\S)--(\w+)", args))
  return used


@pytest.fixture(scope="module")
def helps():
  """{tool: stdout of `python -m tools.<tool> --help`}, two at a time."""
  env = dict(os.environ, PYTHONPATH=ROOT)

  def run(tool):
    result = subprocess.run([sys.executable, "-m", f"tools.{tool}", "--help"],
                            cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return tool, result.stdout

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    return dict(pool.map(run, TOOLS))


def test_the_docs_use_the_tools():
  used = documented_flags()
  assert {"run_classifier", "run_squad", "run_race", "run_pretraining",
          "export_savedmodel", "convert_checkpoint", "train_sentencepiece",
          "create_pretraining_data", "export_tflite"} <= set(used)
  assert {"albert_config_file", "init_checkpoint", "output_dir", "do_train",
          "train_step"} <= used["run_classifier"] | used["run_squad"]


@pytest.mark.parametrize("tool", TOOLS)
def test_help_lists_the_documented_flags(helps, tool):
  shown = set(re.findall(r"^\s+--(?:\[no\])?(\w+)", helps[tool], re.M))
  expected = {name[2:] if name.startswith("no") and name[2:] in shown
              else name for name in documented_flags().get(tool, ())}
  assert expected <= shown, sorted(expected - shown)


@pytest.mark.parametrize("tool", TOOLS)
def test_help_keeps_the_usage_example_lines(helps, tool):
  with open(os.path.join(ROOT, "tools", f"{tool}.py"),
            encoding="utf-8") as f:
    doc = ast.get_docstring(ast.parse(f.read()), clean=False)
  help_lines = set(helps[tool].splitlines())
  examples = [line for line in doc.splitlines()
              if line.strip().startswith(("python -m", "--"))]
  assert examples
  missing = [line for line in examples if line not in help_lines]
  assert not missing, missing


@pytest.mark.parametrize("tool", ["run_classifier", "run_pretraining"])
def test_help_of_a_console_script(helps, tool):
  """Started as a console script (pyproject [project.scripts]) the tool is
  not __main__; --help still shows its docstring and flags."""
  code = (f"import sys; sys.argv[0] = 'albert-{tool}'\n"
          f"from tools.{tool} import run\nrun()\n")
  result = subprocess.run([sys.executable, "-c", code, "--help"], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=120)
  as_module = helps[tool].replace(
      os.path.join(ROOT, "tools", f"{tool}.py") + ":", f"albert-{tool}:")
  assert result.stdout == as_module
