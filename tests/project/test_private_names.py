"""No module uses another module's private names.

A leading underscore says "this module's business": another module that
imports `_name`, calls `module._name(...)` or reads `SomeClass._name` ties
itself to what its owner may change freely. Read from every module's syntax
tree (imports inside functions included) over our packages and benchmarks/:
a name bound to one of our modules, or to a class or function imported from
one, must not be followed by a private attribute. An object's private
attribute is found by name: `obj._x` (obj not `self` or `cls`) where `_x` is
defined by another of our modules (a def, or an assignment to `self._x`) and
not by this one.
"""

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("albert_common", "albert_tf", "benchmarks", "data_pipeline",
            "tools")

# Uses of another module's private name, with why each is allowed.
ALLOWED = {}

# Private names of third-party objects that one of our modules happens to
# define too (the by-name rule cannot tell them apart): not ours.
THIRD_PARTY = {
    # tf_keras's RandomGenerator (Dropout's self._random_generator).
    "albert_tf/layers/checkpointed_dropout.py": {
        "self._random_generator._generator"},
}

# namedtuple's public API is spelt with an underscore.
_NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make",
                   "_field_defaults"}


def _is_private(name: str) -> bool:
  return name.startswith("_") and not (name.startswith("__") and
                                       name.endswith("__")) and (
      name not in _NAMEDTUPLE_API)


def _is_ours(module: str) -> bool:
  return module.split(".")[0] in PACKAGES


def _is_module(dotted: str) -> bool:
  path = ROOT.joinpath(*dotted.split("."))
  return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module_name(path: pathlib.Path) -> str:
  parts = path.relative_to(ROOT).with_suffix("").parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_uses(path: pathlib.Path, own: str):
  """(line, what) of every use of another module's private name in the
  module `own` (dotted) at `path`."""
  tree = ast.parse(path.read_text(), str(path))
  bound = {}  # local name -> the module (or module.attribute) it names
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if _is_ours(alias.name):
          if alias.asname:
            bound[alias.asname] = alias.name
          else:
            top = alias.name.split(".")[0]
            bound[top] = top
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and (
        _is_ours(node.module)):
      for alias in node.names:
        if _is_private(alias.name) and node.module != own:
          found.append((node.lineno,
                        f"from {node.module} import {alias.name}"))
        bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
  for node in ast.walk(tree):
    if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
      continue
    chain = []
    value = node.value
    while isinstance(value, ast.Attribute):
      chain.append(value.attr)
      value = value.value
    if not isinstance(value, ast.Name) or value.id not in bound:
      continue
    target = ".".join([bound[value.id]] + chain[::-1])
    # A dotted chain of modules: the owner is the last module in it.
    owner = target
    while owner and not _is_module(owner):
      owner = owner.rpartition(".")[0]
    if owner != own:
      found.append((node.lineno, f"{target}.{node.attr}"))
  return sorted(set(found))


def private_definitions(path: pathlib.Path):
  """Private names a module defines: functions, classes, methods, and
  attributes assigned on `self` / `cls`."""
  names = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)) and _is_private(node.name):
      names.add(node.name)
    elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
          and isinstance(node.value, ast.Name)
          and node.value.id in ("self", "cls") and _is_private(node.attr)):
      names.add(node.attr)
  return names


def _imported_names(tree):
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
      names.update((a.asname or a.name).split(".")[0] for a in node.names)
  return names


def object_private_uses(path: pathlib.Path, others: set):
  """(line, what): `obj._x` where `_x` is one of `others` (private names
  other modules define) and not defined here; obj is not self, cls,
  super() or an imported name (those are `private_uses`')."""
  own = private_definitions(path)
  tree = ast.parse(path.read_text(), str(path))
  skip = {"self", "cls"} | _imported_names(tree)
  found = []
  for node in ast.walk(tree):
    if not (isinstance(node, ast.Attribute) and node.attr in others
            and node.attr not in own):
      continue
    value = node.value
    if isinstance(value, ast.Name) and value.id in skip:
      continue
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and (
        value.func.id == "super"):
      continue
    found.append((node.lineno, ast.unparse(node)))
  return found


def _paths():
  return [path for package in PACKAGES
          for path in sorted((ROOT / package).rglob("*.py"))]


@functools.lru_cache(maxsize=None)  # both tests read one walk of the tree
def _all_uses():
  paths = _paths()
  defined = {path: private_definitions(path) for path in paths}
  uses = {}
  for path in paths:
    others = set().union(*(names for p, names in defined.items()
                           if p != path))
    found = (private_uses(path, _module_name(path)) +
             object_private_uses(path, others))
    if found:
      uses[str(path.relative_to(ROOT))] = sorted(set(found))
  return uses


def test_no_module_uses_another_modules_private_names():
  wrong = []
  for path, uses in _all_uses().items():
    for line, what in uses:
      if what not in ALLOWED.get(path, set()) | THIRD_PARTY.get(path, set()):
        wrong.append(f"{path}:{line}: {what}")
  assert not wrong, "\n".join(wrong)


def test_allowlist_is_not_stale():
  """Each allowed use still exists (drop an entry once it is fixed)."""
  uses = {path: {what for _, what in found}
          for path, found in _all_uses().items()}
  stale = [f"{path}: {what}"
           for path, whats in list(ALLOWED.items()) + list(THIRD_PARTY.items())
           for what in whats if what not in uses.get(path, set())]
  assert not stale, "\n".join(stale)


def test_finds_each_kind_of_use(tmp_path):
  source = tmp_path / "example.py"
  source.write_text(
      "from data_pipeline.tf_tokenization import _char_class\n"
      "from data_pipeline import tf_tokenization\n"
      "from data_pipeline.squad import SquadExample\n"
      "import data_pipeline.glue as glue\n"
      "tf_tokenization._patterns()\n"
      "SquadExample._helper\n"
      "glue._PROCESSORS\n"
      "tf_tokenization.__name__\n"
      "tf_tokenization.public()\n")
  whats = [what for _, what in private_uses(source, "example")]
  assert whats == ["from data_pipeline.tf_tokenization import _char_class",
                   "data_pipeline.tf_tokenization._patterns",
                   "data_pipeline.squad.SquadExample._helper",
                   "data_pipeline.glue._PROCESSORS"], whats


def test_finds_an_objects_private_attribute(tmp_path):
  source = tmp_path / "example.py"
  source.write_text(
      "class Mine:\n"
      "  def __init__(self, tokenizer):\n"
      "    self._own = tokenizer._wordpiece\n"
      "    self._own._own\n"
      "    super()._wordpiece\n")
  found = object_private_uses(source, {"_wordpiece", "_own"})
  assert found == [(3, "tokenizer._wordpiece")], found
