"""albert_tf.checkpoints imports one way, with `converter` on top; so does
albert_tf.exports, with each export function's module on top.

The graph is read from every import statement of the package's modules,
those inside functions included (a function-level import must not hide a
cycle). A package's `__init__` is its face: it re-exports the entry points
lazily and is not a node of the graph.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "albert_tf.checkpoints"


def _folder(package):
  return ROOT.joinpath(*package.split("."))


def _modules(package=PACKAGE):
  return sorted(p.stem for p in _folder(package).glob("*.py")
                if p.stem != "__init__")


def _intra_package_imports(module: str, package=PACKAGE):
  """The package's modules that `module` imports, at any depth."""
  modules = set(_modules(package))
  path = _folder(package) / f"{module}.py"
  prefix = package + "."
  found = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith(prefix):
          found.add(alias.name[len(prefix):].split(".")[0])
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      if node.module == package:
        found.update(a.name for a in node.names if a.name in modules)
      elif node.module.startswith(prefix):
        found.add(node.module[len(prefix):].split(".")[0])
    elif isinstance(node, ast.ImportFrom):  # relative
      raise AssertionError(f"{module}: a relative import")
  return found - {module}


def _graph(package=PACKAGE):
  return {m: _intra_package_imports(m, package) for m in _modules(package)}


def _cycle(graph):
  """One cycle as a list of modules, or None."""
  state = {}

  def visit(node, path):
    state[node] = "open"
    for nxt in sorted(graph[node]):
      if state.get(nxt) == "open":
        return path[path.index(nxt):] + [nxt]
      if nxt not in state:
        found = visit(nxt, path + [nxt])
        if found:
          return found
    state[node] = "done"
    return None

  for start in sorted(graph):
    if start not in state:
      found = visit(start, [start])
      if found:
        return found
  return None


def test_graph_is_read():
  graph = _graph()
  assert "keras_hub_preset" in graph["converter"]
  assert "mapping" in graph["keras_hub_preset"]


def test_checkpoints_package_has_no_cycle():
  cycle = _cycle(_graph())
  assert cycle is None, " -> ".join(cycle)


def test_cycle_finder_finds_one():
  assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_exports_package_has_no_cycle():
  graph = _graph("albert_tf.exports")
  assert "squad_serving" in graph["squad_export"]
  cycle = _cycle(graph)
  assert cycle is None, " -> ".join(cycle)


def test_converter_is_on_top():
  importers = [m for m, deps in _graph().items() if "converter" in deps]
  assert not importers, f"{importers} import converter"


def test_configs_imports_nothing_of_the_package():
  """configs is read first by the tools (before TensorFlow loads)."""
  assert _graph()["configs"] == set()


def test_warm_start_imports_weight_loading_not_the_converter():
  path = ROOT / "albert_tf" / "training" / "warm_start.py"
  names = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.ImportFrom):
      names.update(f"{node.module}.{a.name}" for a in node.names)
  assert f"{PACKAGE}.weight_loading" in names
  assert f"{PACKAGE}.converter" not in names
