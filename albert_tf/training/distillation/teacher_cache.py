"""The teacher's logits, computed once per run and kept beside it.

<output_dir>/teacher_logits.npz holds, per split ("train", "unlabeled",
"dev"), the teacher's logits float32 [records, outputs] in record order,
and the fingerprint they belong to: the teacher's checkpoint digest, the
SHA-256 of each data file and of the vocabulary file, and every setting
that changes the records (record_settings: how the files are read -- the
format, the text and label columns, skipped labels and records, the task
type -- --do_lower_case and --max_seq_length). A rerun (resume after a
kill) reads it; a cache of another fingerprint (the teacher retrained,
another file, another setting) is stale and stops the run in one line
naming what changed, before anything is written. The epoch loop reads
logits from the training targets only: the teacher never runs again for
them.

The teacher runs batched in the run's length buckets (evaluation
batches, input order restored by EXAMPLE_INDEX).
"""

import hashlib
import io
import json
from typing import Dict, Mapping, Tuple

import numpy as np

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError

CACHE = "teacher_logits.npz"
_FINGERPRINT = "__fingerprint__"
_MISSING = object()
# The own-data settings that do not change the records: the files (their
# bytes are digested per split) and what only the evaluation or the export
# reads. Every other one (and any added later) is in the fingerprint.
NOT_RECORD_SETTINGS = ("train_file", "dev_file", "test_file", "export_dir",
                       "threshold")
# The fine-tuning settings that change the records (the vocabulary file is
# digested).
RECORD_PARAMS = ("do_lower_case", "max_seq_length")


def file_digest(path: str) -> str:
  return hashlib.sha256(file_io.read_bytes(path)).hexdigest() if path else ""


def record_settings(own_data_options, params) -> Dict[str, object]:
  """Flag name -> value of every setting that changes the records: the
  leaf fields of OwnDataOptions but NOT_RECORD_SETTINGS, and
  RECORD_PARAMS of FinetuningParams (JSON values: tuples as lists)."""
  values = {field.name: getattr_path(own_data_options, field.path)
            for field in settings_fields.leaf_fields(type(own_data_options))
            if field.name not in NOT_RECORD_SETTINGS}
  values.update({name: getattr(params, name) for name in RECORD_PARAMS})
  return json.loads(json.dumps(values, sort_keys=True))


def getattr_path(settings, path):
  """The value at a leaf field's path of nested settings."""
  for name in path:
    settings = getattr(settings, name)
  return settings


def fingerprint(teacher_digest: str, data_files: Mapping[str, str],
                vocabulary_file: str, settings: Mapping[str, object]
               ) -> Dict:
  """What the logits depend on (module docstring), JSON-able; `settings`
  is record_settings'."""
  return {"teacher": teacher_digest,
          "data": {split: file_digest(path)
                   for split, path in sorted(data_files.items())},
          "vocabulary": file_digest(vocabulary_file),
          "settings": json.loads(json.dumps(dict(settings), sort_keys=True))}


def read_cache(output_dir: str, expected: Dict
              ) -> Tuple[Dict[str, np.ndarray], Dict]:
  """(the cached logits of the splits `expected` has, the stored
  fingerprint); ({}, {}) without a cache. A split of the cache that this
  run does not use (the training file in an evaluation-only rerun) is not
  compared.

  Raises:
    UserInputError: a stale cache (naming what changed).
  """
  path = file_io.join(output_dir, CACHE)
  if not file_io.exists(path):
    return {}, {}
  with np.load(io.BytesIO(file_io.read_bytes(path))) as stored:
    arrays = {k: stored[k] for k in stored.files}
  found = json.loads(str(arrays.pop(_FINGERPRINT)))
  changed = [k for k in ("teacher", "vocabulary")
             if found.get(k) != expected[k]]
  changed += [f"{split} file" for split, digest in expected["data"].items()
              if found["data"].get(split, digest) != digest]
  if "settings" not in found:
    changed.append("record settings (not recorded by the code that wrote "
                   "it)")
  else:
    changed += [f"--{name}" for name, value in expected["settings"].items()
                if found["settings"].get(name, _MISSING) != value]
  if changed:
    raise UserInputError(
        f"{path} holds the logits of another {', '.join(changed)} (teacher, "
        "data or the records' settings changed since it was written); use a "
        "new --output_dir or remove it")
  return ({k: v for k, v in arrays.items() if k in expected["data"]},
          found)


def write_cache(output_dir: str, expected: Dict,
                logits: Mapping[str, np.ndarray]) -> None:
  """Writes the logits and their fingerprint atomically."""
  buffer = io.BytesIO()
  np.savez(buffer, **{k: np.asarray(v, np.float32) for k, v in
                      logits.items()},
           **{_FINGERPRINT: np.array(json.dumps(expected, sort_keys=True))})
  file_io.makedirs(output_dir)
  file_io.write_atomic(file_io.join(output_dir, CACHE), buffer.getvalue())


def predict_logits(model, features, max_seq_length: int, batch_size: int,
                   pad_id: int, buckets=()) -> np.ndarray:
  """The model's logits float32 [N, C] over featurised records, batched
  in `buckets`, in record order."""
  import tensorflow as tf

  from albert_tf.training.finetuning import bucketed_steps
  from data_pipeline.tasks import text_pair_inputs
  dataset = text_pair_inputs.make_dataset(
      features, max_seq_length, batch_size, pad_id=pad_id, buckets=buckets)
  if len(tuple(buckets)) > 1:
    predictor = bucketed_steps.InputOrderPredictor(
        model, tf.distribute.get_strategy())
    return np.asarray(predictor(dataset)["logits"], np.float32)
  outputs = [model(batch, training=False)["logits"].numpy()
             for batch in dataset]
  return np.concatenate(outputs).astype(np.float32)


def teacher_logits(output_dir: str, expected: Dict, build_model,
                   splits: Mapping[str, object], max_seq_length: int,
                   batch_size: int, pad_id: int, buckets=()
                  ) -> Dict[str, np.ndarray]:
  """The logits of every split: cached ones checked and reused, the others
  computed once with build_model() and added to the cache."""
  cached, found = read_cache(output_dir, expected)
  missing = [split for split in splits if split not in cached]
  if not missing:
    return {split: cached[split] for split in splits}
  model = build_model()
  logits = dict(cached)
  for split in missing:
    logits[split] = predict_logits(model, splits[split], max_seq_length,
                                   batch_size, pad_id, buckets)
  if found:  # keep the splits this run did not use
    with np.load(io.BytesIO(file_io.read_bytes(
        file_io.join(output_dir, CACHE)))) as stored:
      kept = {k: stored[k] for k in stored.files
              if k != _FINGERPRINT and k not in logits}
    logits.update(kept)
    expected = dict(expected, data=dict(found["data"], **expected["data"]))
  write_cache(output_dir, expected, logits)
  return {split: logits[split] for split in splits}
