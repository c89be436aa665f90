"""The package graph is one-way and the wheel installs only what users import.

tools -> albert_tf -> data_pipeline -> albert_common (the leaf):
read from every module's import statements, not from a list kept by hand.
"""

import ast
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("albert_common", "albert_tf", "data_pipeline", "tools")
# Which of our packages each package may import (besides itself).
ALLOWED = {"tools": {"albert_common", "albert_tf", "data_pipeline"},
           "albert_tf": {"albert_common", "data_pipeline"},
           "data_pipeline": {"albert_common"},
           "albert_common": set()}


def _imports(path: pathlib.Path):
  """Top-level names of every absolute import in a module (any depth)."""
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      yield node.module.split(".")[0]


def test_package_imports_go_one_way():
  wrong = []
  for package in PACKAGES:
    for path in sorted((ROOT / package).rglob("*.py")):
      for name in set(_imports(path)):
        if name in PACKAGES and name != package and (
            name not in ALLOWED[package]):
          wrong.append(f"{path.relative_to(ROOT)} imports {name}")
  assert not wrong, "\n".join(wrong)


def _module_level_imports(path: pathlib.Path):
  """Top-level names of the imports run when the module loads."""
  for node in ast.parse(path.read_text(), str(path)).body:
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      yield node.module.split(".")[0]


def test_common_leaf_loads_only_the_standard_library():
  """albert_common imports neither package nor, at load, TensorFlow: only
  file_io calls TensorFlow, importing it inside the functions that do."""
  stdlib = set(sys.stdlib_module_names) | {"albert_common"}
  for path in sorted((ROOT / "albert_common").glob("*.py")):
    assert set(_module_level_imports(path)) <= stdlib, path.name
    assert set(_imports(path)) <= stdlib | {"tensorflow"}, path.name


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
  """The wheel `pip install .` would build, from a copy of the sources:
  pip builds in the source folder, where a build/lib left by an older tree
  would add modules that no longer exist (and the checkout stays clean)."""
  source = tmp_path_factory.mktemp("source")
  for name in ("pyproject.toml", "README.md"):
    shutil.copy(ROOT / name, source / name)
  for package in ("albert_common", "albert_tf", "data_pipeline", "tools"):
    shutil.copytree(ROOT / package, source / package,
                    ignore=shutil.ignore_patterns("__pycache__"))
  out = tmp_path_factory.mktemp("wheel")
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                  "--no-build-isolation", "--quiet", "-w", str(out),
                  str(source)], check=True, capture_output=True)
  (path,) = out.glob("*.whl")
  return path


def _source_packages():
  """Dotted names of our packages as the wheel should hold them."""
  names = set()
  for package in ("albert_common", "albert_tf", "data_pipeline", "tools"):
    for init in (ROOT / package).rglob("__init__.py"):
      parts = init.parent.relative_to(ROOT).parts
      if parts[0] == "tools":
        parts = ("albert_tf", "cli") + parts[1:]
      names.add(".".join(parts))
  return names


def test_wheel_holds_our_packages_under_three_names(wheel):
  with zipfile.ZipFile(wheel) as z:
    files = z.namelist()
    entry_points = next(z.read(n).decode() for n in files
                        if n.endswith("entry_points.txt"))
  top = {f.split("/")[0] for f in files if ".dist-info/" not in f}
  assert top == {"albert_common", "albert_tf", "data_pipeline"}
  packages = {f.rsplit("/", 1)[0].replace("/", ".") for f in files
              if f.endswith("/__init__.py")}
  assert packages == _source_packages()
  modules = {f for f in files if f.endswith(".py")}
  for tool in (ROOT / "tools").glob("*.py"):
    assert f"albert_tf/cli/{tool.name}" in modules

  # Every CLI (a tools module with a `run()` entry point) has a console
  # script, including the three fine-tuning ones.
  scripts = {line.split(" = ")[1].strip() for line in entry_points.splitlines()
             if " = " in line}
  clis = {f"albert_tf.cli.{p.stem}:run" for p in (ROOT / "tools").glob("*.py")
          if "\ndef run():" in p.read_text() and p.stem != "cli"}
  assert scripts == clis
  assert {"albert_tf.cli.run_classifier:run", "albert_tf.cli.run_squad:run",
          "albert_tf.cli.run_race:run"} <= scripts


def test_installed_console_script_answers_help(wheel, tmp_path):
  target = tmp_path / "site"
  subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                  "--quiet", "--target", str(target), str(wheel)],
                 check=True, capture_output=True)
  # Outside the checkout, so only the installed copy can be imported.
  result = subprocess.run(
      [sys.executable, str(target / "bin" / "albert-train-sentencepiece"),
       "--help"], cwd=tmp_path, env={"PYTHONPATH": str(target)},
      capture_output=True, text=True, timeout=120)
  # absl's --help prints the usage and exits with status 1.
  assert "Traceback" not in result.stderr, result.stderr
  assert "--vocab_size" in result.stdout, result.stderr
  assert str(target) in subprocess.run(
      [sys.executable, "-c",
       "import albert_tf.cli.support.cli as m; print(m.__file__)"],
      cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True,
      text=True, check=True).stdout


def test_user_script_outside_the_checkout_imports_the_project(tmp_path):
  """`make venv` installs the project editable: a user's own script in any
  folder, run with .venv/bin/python, imports this checkout's packages (the
  Keras 3 example of docs/export-and-keras.md included), with no PYTHONPATH."""
  venv_python = ROOT / ".venv" / "bin" / "python"
  assert venv_python.exists(), "run `make venv` (make test does)"
  script = tmp_path / "work" / "finetune.py"
  script.parent.mkdir()
  script.write_text(
      "import albert_common, albert_tf, data_pipeline\n"
      "from albert_tf.keras3.saved_model_layers import encoder_layer\n"
      "from albert_tf.cli import run_classifier\n"
      "for m in (albert_common, albert_tf, data_pipeline, run_classifier):\n"
      "  print(m.__file__)\n"
      "print(callable(encoder_layer))\n")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  result = subprocess.run([str(venv_python), str(script)],
                          cwd=script.parent, env=env, capture_output=True,
                          text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  lines = result.stdout.split()
  assert lines[:4] == [
      str(ROOT / "albert_common" / "__init__.py"),
      str(ROOT / "albert_tf" / "__init__.py"),
      str(ROOT / "data_pipeline" / "__init__.py"),
      str(ROOT / "tools" / "run_classifier.py")]
  assert lines[4] == "True"
