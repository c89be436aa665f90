"""Runs tools one after another in this process and records how control
flows through ours in each.

  python tests/scripts/control_flow_script.py OUT.json RUNS.json

RUNS.json: a list of [TRAIN_FUNCTION, "tools.NAME", "--flag=value", ...];
OUT.json: {"tools.NAME": trace} (one TensorFlow import for every run).
A trace hook sees every Python call (sys.settrace's "call" events only: unlike
a profile hook it is not called on every return and C function call; for a
file not ours, TensorFlow's, it costs a dict lookup). It records:
  - `edges`: [caller file, callee file] of every call from one of our files
    into another of our files (albert_common, albert_tf, data_pipeline,
    tools), once each;
  - `spine`: our files on the stack from the tool's `main` down, when
    TRAIN_FUNCTION (a function name, e.g. "train") is first entered in the
    runner;
  - `reads`: path -> how many times albert_common.file_io.read_bytes read it.
Each run starts with no flag parsed and its own empty records; a module
first imported by an earlier run runs no import-time code again (its calls
are in that run's edges).
Used by tests/project/test_control_flow.py.
"""

import collections
import json
import os
import runpy
import sys

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
PACKAGES = ("albert_common", "albert_tf", "data_pipeline", "tools")


def _ours(filename):
  """Our file's path relative to the checkout, or None."""
  if not filename.startswith(ROOT + os.sep):
    return None
  relative = os.path.relpath(filename, ROOT)
  return relative if relative.split(os.sep)[0] in PACKAGES else None


def trace_run(train_function, tool, args):
  """The trace of `tool` (e.g. "tools.run_classifier") run as `python -m`
  with `args`: dict(edges, spine, reads)."""
  edges, reads, spine = set(), collections.Counter(), []
  ours_by_file = {}  # co_filename -> _ours(co_filename): the hook's hot path

  def ours_of(filename):
    try:
      return ours_by_file[filename]
    except KeyError:
      ours_by_file[filename] = _ours(filename)
      return ours_by_file[filename]

  def trace(frame, event, arg):
    """The global trace function: called on "call" events only; returns
    None, so no frame is traced line by line."""
    del event, arg
    filename = frame.f_code.co_filename
    try:  # inline, not ours_of(): the hook runs on TensorFlow's calls too
      callee = ours_by_file[filename]
    except KeyError:
      callee = ours_of(filename)
    if callee is None:
      return
    caller = frame.f_back and ours_of(frame.f_back.f_code.co_filename)
    if caller and caller != callee:
      edges.add((caller, callee))
    name = frame.f_code.co_name
    if name == "read_bytes" and callee.endswith("file_io.py"):
      reads[frame.f_locals.get("path")] += 1
    if name == train_function and callee.endswith("runner.py") and (
        not spine):
      stack, f = [], frame
      while f is not None:
        ours = _ours(f.f_code.co_filename)
        if ours and (not stack or stack[-1] != ours):
          stack.append(ours)
        if ours == tool_file and f.f_code.co_name == "main":
          break
        f = f.f_back
      spine.extend(reversed(stack))

  from absl import flags  # noqa: PLC0415
  flags.FLAGS.unparse_flags()  # as in a fresh process
  tool_file = os.path.join(*tool.split(".")) + ".py"
  sys.argv = [tool] + list(args)
  sys.settrace(trace)
  try:
    runpy.run_module(tool, run_name="__main__")
  except SystemExit as e:
    if e.code:
      raise
  finally:
    sys.settrace(None)
  return dict(edges=sorted(edges), spine=spine, reads=reads)


def main():
  out, runs_file = sys.argv[1:3]
  with open(runs_file) as f:
    runs = json.load(f)
  # Third-party imports first: the hook then only pays for their calls, not
  # for importing them.
  import orbit  # noqa: F401
  import tensorflow  # noqa: F401
  import tf_keras  # noqa: F401
  traces = {}
  for train_function, tool, *args in runs:
    traces[tool] = trace_run(train_function, tool, args)
  with open(out, "w") as f:
    json.dump(traces, f)


if __name__ == "__main__":
  sys.path.insert(0, ROOT)
  main()
