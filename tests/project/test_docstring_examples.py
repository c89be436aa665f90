"""The `Example:` sections of the public docstrings run and stay true.

Each named object's own docstring (not its methods') is run with doctest,
in its module's globals, as `python -m doctest` would: tiny configs,
temporary folders, no network.
"""

import doctest
import importlib

import pytest

# (module, object) whose docstring holds an example.
EXAMPLES = [
    ("albert_tf.networks.albert_encoder", "AlbertEncoder"),
    ("albert_tf.models.albert_pretrainer", "AlbertPretrainer"),
    ("albert_tf.checkpoints.converter", "convert_checkpoint"),
    pytest.param("albert_tf.checkpoints.weight_loading", "load_weights_into",
                 marks=pytest.mark.slow),
    # Each exports a SavedModel (about a minute on 2 cores); make test's
    # export round trips are tests/albert_tf/exports/test_export.py's.
    pytest.param("albert_tf.exports.saved_model_loading", "load_saved_model",
                 marks=pytest.mark.slow),
    pytest.param("albert_tf.exports.saved_model_loading", "hub_layer",
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("module_name, name", EXAMPLES,
                         ids=[e.values[1] if hasattr(e, "values") else e[1]
                              for e in EXAMPLES])
def test_docstring_example_runs(module_name, name):
  module = importlib.import_module(module_name)
  finder = doctest.DocTestFinder(recurse=False)
  tests = finder.find(getattr(module, name), name, module=module)
  assert tests and tests[0].examples, f"{name} has no example"
  runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
  for test in tests:
    runner.run(test)
  result = runner.summarize(verbose=False)
  assert result.attempted > 0
  assert result.failed == 0, f"{result.failed} of {name}'s examples failed"
