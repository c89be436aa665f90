"""Imports run one way between the folders of data_pipeline and albert_tf.

data_pipeline: tasks -> pretraining -> corpora -> tokenization (and
albert_common). albert_tf: training -> exports -> checkpoints -> models ->
networks -> layers -> the root modules (config, ...); keras3 stands apart
(Keras 3), reached only by a function-level import of the keras-hub preset
code. Inside training, pretraining/ and finetuning/ build on the runtime
modules and not on each other; inside exports, serving/, litert/ and onnx/
build on the encoder-side modules (and not litert/ and onnx/ on each
other); the tasks do not import each other.

Every import statement counts, those inside functions included. The table
below is the whole rule: there is no list of exceptions.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]

_DP = "data_pipeline"
_TF = "albert_tf"
_TASK_FOLDERS = {f"{_DP}.tasks.{t}" for t in ("glue", "squad", "race", "ner",
                                              "own_data", "multiple_choice")}
_DATA = {f"{_DP}.tokenization", f"{_DP}.corpora", f"{_DP}.pretraining",
         f"{_DP}.tasks"} | _TASK_FOLDERS
_MODEL = {_TF, f"{_TF}.layers", f"{_TF}.networks", f"{_TF}.models"}

# Folder -> the folders of ours (besides itself) its modules may import.
# albert_common may be imported from anywhere.
ALLOWED = {
    _DP: set(),
    f"{_DP}.tokenization": set(),
    f"{_DP}.corpora": {f"{_DP}.tokenization"},
    f"{_DP}.pretraining": {f"{_DP}.corpora", f"{_DP}.tokenization"},
    f"{_DP}.pretraining.beam": {f"{_DP}.pretraining", f"{_DP}.corpora",
                                f"{_DP}.tokenization"},
    f"{_DP}.tasks": {f"{_DP}.pretraining", f"{_DP}.corpora",
                     f"{_DP}.tokenization"},
    **{task: {f"{_DP}.tasks", f"{_DP}.pretraining", f"{_DP}.corpora",
              f"{_DP}.tokenization"} for task in _TASK_FOLDERS},
    _TF: set(),
    f"{_TF}.layers": {_TF},
    f"{_TF}.networks": {_TF, f"{_TF}.layers"},
    f"{_TF}.models": {_TF, f"{_TF}.layers", f"{_TF}.networks"},
    f"{_TF}.keras3": {f"{_DP}.tokenization"},
    # converter and readers dispatch to the keras-hub preset format, which
    # builds on the package's configs, name tables and mapping.
    f"{_TF}.checkpoints": _MODEL | {f"{_TF}.checkpoints.keras_hub_presets",
                                    f"{_TF}.checkpoints.reading",
                                    f"{_TF}.checkpoints.task_models",
                                    f"{_DP}.tokenization"},
    # Readers of every layout: the package's locate, name tables and
    # mapping; the task-model and keras-hub preset readers they dispatch to.
    f"{_TF}.checkpoints.reading": _MODEL | {
        f"{_TF}.checkpoints", f"{_TF}.checkpoints.keras_hub_presets",
        f"{_TF}.checkpoints.task_models"},
    f"{_TF}.checkpoints.keras_hub_presets": _MODEL | {
        f"{_TF}.checkpoints", f"{_TF}.checkpoints.task_models",
        f"{_TF}.keras3", f"{_DP}.tokenization"},
    # Task models of every layout and ours: head tables, readers on the
    # package's mapping and object readers, the label lists a source's
    # head gives (data_pipeline.tasks' LabelList).
    f"{_TF}.checkpoints.task_models": _MODEL | {f"{_TF}.checkpoints",
                                                f"{_TF}.checkpoints.reading",
                                                f"{_DP}.tasks"},
    f"{_TF}.exports": _MODEL | {f"{_TF}.checkpoints"} | _DATA,
    f"{_TF}.exports.serving": _MODEL | {f"{_TF}.exports"} | _DATA,
    f"{_TF}.exports.litert": _MODEL | {f"{_TF}.exports",
                                       f"{_TF}.exports.serving"} | _DATA,
    f"{_TF}.exports.onnx": _MODEL | {f"{_TF}.exports",
                                     f"{_TF}.exports.serving"} | _DATA,
    # --runtime=onnx|litert runs the converted files with their runtimes;
    # its Beam path launches its job as data creation does (runner
    # options, a worker's user error as the tool's one line).
    f"{_TF}.prediction": {_TF, f"{_TF}.exports", f"{_TF}.exports.litert",
                          f"{_TF}.exports.onnx",
                          f"{_DP}.pretraining.beam"} | _DATA,
    f"{_TF}.training": _MODEL | {f"{_TF}.checkpoints",
                                 f"{_TF}.checkpoints.task_models"},
    f"{_TF}.training.pretraining": _MODEL | {
        f"{_TF}.training", f"{_TF}.checkpoints", f"{_TF}.checkpoints.reading",
        f"{_DP}.pretraining", f"{_DP}.tasks", f"{_DP}.tokenization"},
    f"{_TF}.training.finetuning": _MODEL | {
        f"{_TF}.training", f"{_TF}.checkpoints",
        f"{_TF}.checkpoints.task_models", f"{_TF}.exports"} | _DATA,
    # The tasks, one module each, on the runner, params and settings; each
    # exports its serving model.
    f"{_TF}.training.finetuning.tasks": _MODEL | {
        f"{_TF}.training", f"{_TF}.training.finetuning",
        f"{_TF}.checkpoints.task_models", f"{_TF}.exports.serving"} | _DATA,
    f"{_TF}.training.distillation": _MODEL | {
        f"{_TF}.training", f"{_TF}.training.finetuning",
        f"{_TF}.training.finetuning.tasks",
        f"{_TF}.checkpoints", f"{_TF}.exports",
        f"{_TF}.exports.serving"} | _DATA,
}


def _folders():
  """Dotted names of every package folder of data_pipeline and albert_tf."""
  return {".".join(p.parent.relative_to(ROOT).parts)
          for top in (_DP, _TF) for p in (ROOT / top).rglob("__init__.py")}


def _folder_of(name: str, folders) -> str:
  """The folder (package) a dotted import name lands in: the package itself
  for a module or a name inside one, the deepest folder on the path."""
  parts = name.split(".")
  for i in range(len(parts), 0, -1):
    if ".".join(parts[:i]) in folders:
      return ".".join(parts[:i])
  return parts[0]


def _edges():
  """(importing file, its folder, the imported folder) of every import."""
  folders = _folders()
  for folder in sorted(folders):
    for path in sorted(ROOT.joinpath(*folder.split(".")).glob("*.py")):
      for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
          names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
          names = [f"{node.module}.{a.name}" for a in node.names]
        else:
          continue
        for name in names:
          if name.split(".")[0] in (_DP, _TF):
            target = _folder_of(name, folders)
            if target != folder:
              yield path.relative_to(ROOT), folder, target


def test_every_folder_has_a_rule():
  assert _folders() == set(ALLOWED)


def test_folders_import_one_way():
  wrong = [f"{path} ({folder}) imports {target}"
           for path, folder, target in _edges()
           if target not in ALLOWED[folder]]
  assert not wrong, "\n".join(wrong)


# Subfolders of checkpoints that are part of it (module cycles through them
# are checked by tests/project/test_import_graph.py).
_CHECKPOINT_PARTS = (".keras_hub_presets", ".reading", ".task_models")


def _as_checkpoints(folder: str) -> str:
  for part in _CHECKPOINT_PARTS:
    folder = folder.replace(f"{_TF}.checkpoints{part}", f"{_TF}.checkpoints")
  return folder


def test_the_rule_has_no_cycle_but_checkpoints_and_its_presets():
  """Folder to folder, the rule is a DAG once the keras-hub preset and task
  model folders are seen as part of checkpoints (tests/project/
  test_import_graph.py checks that their modules and the converter's form
  no cycle)."""
  merged = {}
  for folder, allowed in ALLOWED.items():
    key = _as_checkpoints(folder)
    merged.setdefault(key, set()).update(_as_checkpoints(a) for a in allowed)
    merged[key].discard(key)
  state = {}

  def visit(node, path):
    state[node] = "open"
    for nxt in sorted(merged.get(node, ())):
      assert state.get(nxt) != "open", " -> ".join(path + [nxt])
      if nxt not in state:
        visit(nxt, path + [nxt])
    state[node] = "done"

  for start in sorted(merged):
    if start not in state:
      visit(start, [start])


def test_the_edges_are_read():
  edges = {(folder, target) for _, folder, target in _edges()}
  assert (f"{_DP}.tasks.squad", f"{_DP}.tokenization") in edges
  assert (f"{_TF}.training.finetuning.tasks",
          f"{_TF}.exports.serving") in edges
  assert (f"{_TF}.checkpoints.keras_hub_presets", f"{_TF}.keras3") in edges


def test_folder_size():
  """No package folder holds more than about 15 modules; tools/ holds the
  commands (one module each, named as `python -m tools.NAME`) and nothing
  else."""
  sizes = {}
  for top in ("albert_common", _DP, _TF, "tools", "benchmarks"):
    for init in [ROOT / top / "__init__.py", *(ROOT / top).rglob(
        "__init__.py")]:
      folder = init.parent
      sizes[str(folder.relative_to(ROOT))] = len(
          [p for p in folder.glob("*.py") if p.name != "__init__.py"])
  # tools/ holds one module per command (`python -m tools.NAME` is the
  # interface): 19 with extend_vocabulary, distill and predict, accepted
  # rather than renaming a command users type.
  limits = {"tools": 19}
  big = {f: n for f, n in sizes.items()
         if n > limits.get(f, 16) and f != "benchmarks"}
  assert not big, big
  tools = ROOT / "tools"
  assert all("cli.run(" in p.read_text() for p in tools.glob("*.py")
             if p.name != "__init__.py")


def test_every_package_says_what_it_holds_and_may_import():
  missing = []
  for top in ("albert_common", _DP, _TF, "tools"):
    for init in sorted((ROOT / top).rglob("__init__.py")):
      doc = ast.get_docstring(ast.parse(init.read_text())) or ""
      if "May import" not in doc or len(doc.split("\n\n")[0]) < 20:
        missing.append(str(init.relative_to(ROOT)))
  assert not missing, missing


def test_no_function_is_over_90_lines():
  """Long functions are split by what they do (docstrings count)."""
  long = []
  for top in ("albert_common", _DP, _TF, "tools"):
    for path in sorted((ROOT / top).rglob("*.py")):
      for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
          length = node.end_lineno - node.lineno + 1
          if length > 90:
            long.append(f"{path.relative_to(ROOT)}:{node.name} ({length})")
  assert not long, long
