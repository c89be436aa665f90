"""Test data built once per test run, for every pytest-xdist worker.

A session fixture is built once in each worker process that uses it: with
`make test`'s 2 workers, an export fixture of 5 files is usually built twice.
`built_once` builds it into a folder of the run's shared temporary directory
(the parent of the workers' own ones) under a file lock: the first worker
to get there builds it, the other waits for it and reads its result. Without
xdist it is a plain build in this process's temporary directory.

A run's shared directory is new each run (pytest-<N>, or --basetemp emptied),
so nothing is reused across runs or code changes.
"""

import fcntl
import json
import os
import shutil


def built_once(tmp_path_factory, name, build):
  """`build(folder)`'s JSON-serialisable result, built once a run.

  Args:
    tmp_path_factory: pytest's fixture.
    name: the folder's name (one per fixture).
    build: builds into the empty pathlib.Path it is given; returns what
      the fixture returns (paths as str, lists, numbers: read back from
      JSON in the other workers).

  A build that raises leaves no result: the next worker builds again (and
  fails the same way, in its own tests).
  """
  if os.environ.get("PYTEST_XDIST_WORKER") is None:
    return build(tmp_path_factory.mktemp(name))
  shared = tmp_path_factory.getbasetemp().parent / "built_once"
  shared.mkdir(exist_ok=True)
  folder, done = shared / name, shared / f"{name}.json"
  with open(shared / f"{name}.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    if done.exists():
      return json.loads(done.read_text())
    if folder.exists():  # a build that raised
      shutil.rmtree(folder)
    folder.mkdir()
    result = build(folder)
    done.write_text(json.dumps(result))
    return json.loads(done.read_text())  # what the other workers get
