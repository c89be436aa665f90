"""No import cycle between modules: in albert_tf and data_pipeline with their
subpackages; albert_tf.checkpoints with `converter` on top, and
albert_tf.exports with each export function's module on top.

The graph is read from every import statement of the package's modules,
those inside functions included (a function-level import must not hide a
cycle). A package's `__init__` is its face: it re-exports the entry points
lazily and is not a node of the graph.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "albert_tf.checkpoints"


def _folder(package):
  return ROOT.joinpath(*package.split("."))


def _modules(package=PACKAGE):
  """The package's modules, subpackages' included, as dotted names relative
  to the package ("converter", "keras_hub_presets.preset")."""
  folder = _folder(package)
  return sorted(".".join(p.relative_to(folder).with_suffix("").parts)
                for p in folder.rglob("*.py") if p.stem != "__init__")


def _intra_package_imports(module: str, package=PACKAGE):
  """The package's modules that `module` imports, at any depth."""
  modules = set(_modules(package))
  path = _folder(package).joinpath(*module.split(".")).with_suffix(".py")
  prefix = package + "."
  found = set()

  def add(name):  # a module, or a name inside one, or a subpackage
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
      if ".".join(parts[:i]) in modules:
        found.add(".".join(parts[:i]))
        return

  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith(prefix):
          add(alias.name[len(prefix):])
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      if node.module == package or node.module.startswith(prefix):
        base = node.module[len(prefix):] if node.module != package else ""
        for a in node.names:
          add(f"{base}.{a.name}".lstrip("."))
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
  assert "keras_hub_presets.preset" in graph["converter"]
  assert "mapping" in graph["keras_hub_presets.preset"]


def test_checkpoints_package_has_no_cycle():
  cycle = _cycle(_graph())
  assert cycle is None, " -> ".join(cycle)


def test_cycle_finder_finds_one():
  assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_exports_package_has_no_cycle():
  graph = _graph("albert_tf.exports")
  assert "serving.squad_serving" in graph["serving.squad_export"]
  cycle = _cycle(graph)
  assert cycle is None, " -> ".join(cycle)


def test_no_package_has_a_cycle():
  """Module to module, in every package and its subpackages."""
  for package in ("albert_tf", "data_pipeline"):
    graph = _graph(package)
    cycle = _cycle(graph)
    assert cycle is None, f"{package}: " + " -> ".join(cycle)
  graph = _graph("data_pipeline")
  assert "tokenization.sentencepiece_tokenizer" in graph["tasks.race.features"]


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
