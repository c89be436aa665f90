"""tools.distill's library path end to end on a crafted three-class task:
a 2-layer teacher fine-tuned once, a 1-application student distilled from
it (eval_results.json with both metrics, export that answers like the
student), the teacher-logits cache (exact, stale detected), accumulation
K=4 equal to K=1, and bad inputs refused before anything is written."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.training.distillation import teacher as teacher_lib
from albert_tf.training.distillation import teacher_cache
from albert_tf.training.distillation.settings import DistillationOptions
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.tasks import own_data
from tests.albert_tf.training.distillation.distill_kit import distil
from tests.albert_tf.training.distillation.distill_kit import student_weights
from tests.albert_tf.training.finetuning import own_data_kit as kit


def _padded_dev(task, split="dev"):
  from albert_tf.training.finetuning import params as finetuning_params
  run = kit.run_settings(task["root"] / "unused", task["config"], task["spm"],
                         do_train=False)
  del finetuning_params
  data = own_data.read_own_data(
      OwnDataOptions.from_flat(dev_file=task[split]),
      kit.run_settings(task["teacher"], task["config"], task["spm"],
                       do_train=False).params, run.tokenizer)
  return data.features("dev").padded(kit.SEQ, run.tokenizer.pad_id)


@pytest.fixture(scope="module")
def student(task, tmp_path_factory):
  """A 1-application student of the 2-layer teacher, attention_relation
  on, exported."""
  root = tmp_path_factory.mktemp("student")
  out, export = root / "student", str(root / "export")
  result = distil(task, out, export_dir=export,
                   intermediate_loss="attention_relation")
  return dict(result, out=out, export=export)


def test_distil_one_application_trains_evaluates_exports_and_caches(
    task, student, monkeypatch):
  out, export, result = student["out"], student["export"], student
  with open(out / "eval_results.json", encoding="utf-8") as f:
    written = json.load(f)
  with open(os.path.join(task["teacher"], "eval_results.json"),
            encoding="utf-8") as f:
    teacher_run = json.load(f)
  # The teacher's metrics beside the student's are its own run's.
  assert written["teacher/accuracy"] == pytest.approx(teacher_run["accuracy"])
  assert written["teacher/macro_f1"] == pytest.approx(teacher_run["macro_f1"])
  assert written["teacher/accuracy"] > 0.8  # the crafted task is learnt
  assert written["accuracy"] > 0.6 and "macro_f1" in written
  assert result["eval"]["accuracy"] == written["accuracy"]
  # The cache holds the teacher's logits exactly.
  teacher = teacher_lib.read_teacher(task["teacher"])
  model = teacher_lib.build_teacher_model(teacher)
  inputs = _padded_dev(task)
  direct = model({k: tf.constant(v) for k, v in inputs.items()},
                 training=False)["logits"].numpy()
  np.testing.assert_allclose(result["teacher_logits"]["dev"], direct,
                             atol=1e-6)
  # The export answers like the student (its best checkpoint), and names
  # its teacher.
  trained = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(str(out)))
  assert trained.encoder.config.num_hidden_layers == 1
  want = trained({k: tf.constant(v) for k, v in inputs.items()},
                 training=False)["logits"].numpy()
  served = exports.load_saved_model(export).signatures["token_ids"](
      **{k: tf.constant(v) for k, v in inputs.items()})["logits"].numpy()
  np.testing.assert_allclose(served, want, atol=1e-4)
  with open(os.path.join(export, "assets", "distillation.json"),
            encoding="utf-8") as f:
    metadata = json.load(f)
  assert metadata["teacher"] == task["teacher"]
  assert metadata["settings"]["intermediate_loss"] == "attention_relation"
  assert metadata["student_num_hidden_layers"] == 1
  # Another dev file on the same run: the cache is stale, one line.
  with pytest.raises(UserInputError, match="teacher_logits.npz.*dev file"):
    distil(task, out, dev="dev2", export_dir=export)
  # An evaluation-only rerun: the same metrics, from the cache alone.
  built = []
  monkeypatch.setattr(teacher_lib, "build_teacher_model", built.append)
  again = distil(task, out, do_train=False)
  assert not built
  assert again["eval"] == pytest.approx(result["eval"])


def test_accumulation_of_four_equals_one_with_unlabeled_records(task,
                                                                tmp_path):
  """K=4 equals K=1 (dropout on, attention_relation on), the unlabeled
  records' soft targets being the teacher's logits."""
  weights = []
  for k in (1, 4):
    out = tmp_path / f"k{k}"
    result = distil(task, out, train_step=3, save_checkpoints_steps=3,
                     warmup_step=1, gradient_accumulation_steps=k,
                     do_eval=False, unlabeled_file=task["unlabeled"],
                     intermediate_loss="attention_relation")
    student = teacher_lib.build_teacher_model(
        teacher_lib.TeacherRun(
            str(out), teacher_lib.read_teacher(task["teacher"]).config.__class__
            .from_json_file(str(out / "albert_config.json")),
            teacher_lib.read_teacher(task["teacher"]).label_list,
            str(out / "ckpt-3"), ""))
    weights.append(student.get_weights())
  cached = result["teacher_logits"]
  assert sorted(cached) == ["train", "unlabeled"]
  teacher = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(task["teacher"]))
  unlabeled = _padded_dev(task, "dev2")  # the same texts, labelled
  np.testing.assert_allclose(
      cached["unlabeled"],
      teacher({k: tf.constant(v) for k, v in unlabeled.items()},
              training=False)["logits"].numpy(), atol=1e-6)
  moved = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(task["teacher"])).get_weights()
  assert max(np.abs(a - b).max() for a, b in zip(weights[0], moved[:len(
      weights[0])]) if a.shape == b.shape) > 1e-4
  for a, b in zip(*weights):
    np.testing.assert_allclose(a, b, atol=2e-6)


@pytest.mark.parametrize("values, message", [
    (dict(student_layers=3), "--student_layers=3 must be between 1"),
    (dict(student_layers=0), "--student_layers=0 must be between 1"),
    (dict(student_layers=0, student_config="narrow"),
     "--student_init_checkpoint"),
])
def test_bad_students_are_refused_before_anything_is_written(
    task, tmp_path, values, message):
  if values.get("student_config"):
    values["student_config"] = kit.tiny_config(tmp_path / "narrow.json",
                                               hidden_size=16)
  out = tmp_path / "never"
  with pytest.raises(UserInputError, match=message):
    distil(task, out, **values)
  assert not out.exists()


def test_other_task_and_other_vocabulary_are_refused(task, tmp_path):
  rows = kit.regression_rows([["a", "b", "c", "d"]] * 40, 0)
  scores = kit.write_jsonl(tmp_path / "scores.jsonl", rows)
  out = tmp_path / "never"
  other = dict(task, train=scores, dev=scores)
  with pytest.raises(UserInputError, match="regression.*--teacher"):
    distil(other, out)
  assert not out.exists()
  big = kit.tiny_config(tmp_path / "big.json", vocab_size=3000)
  with pytest.raises(UserInputError, match="vocab"):
    from albert_tf.config import AlbertConfig
    from albert_tf.training.distillation import student_rule
    student_rule.student_config(
        AlbertConfig.from_json_file(task["config"]),
        DistillationOptions.from_flat(teacher="t", student_config=big,
                                      student_init_checkpoint="x"))
  assert not out.exists()
  assert teacher_cache.CACHE == "teacher_logits.npz"


def test_stopped_after_a_checkpoint_and_rerun_equals_uninterrupted(
    task, tmp_path, monkeypatch):
  """A run stopped right after ckpt-4 (as a kill would), rerun, ends with
  an uninterrupted run's weights; the rerun reads the teacher cache."""
  from albert_tf.training.finetuning import runner as finetuning_runner
  settings = dict(train_step=8, warmup_step=1, save_checkpoints_steps=4,
                  iterations_per_loop=2, train_batch_size=16, do_eval=False,
                  intermediate_loss="hidden_projection")
  distil(task, tmp_path / "reference", **settings)
  save = finetuning_runner.FinetuningRunner.save_and_evaluate

  class Killed(Exception):
    pass

  def save_then_die(runner):
    result = save(runner)
    if runner.step == 4:
      raise Killed()
    return result

  with monkeypatch.context() as patch:
    patch.setattr(finetuning_runner.FinetuningRunner, "save_and_evaluate",
                  save_then_die)
    with pytest.raises(Killed):
      distil(task, tmp_path / "killed", **settings)
  built = []
  real_build = teacher_lib.build_teacher_model
  monkeypatch.setattr(teacher_lib, "build_teacher_model",
                      lambda t: built.append(t) or real_build(t))
  distil(task, tmp_path / "killed", **settings)
  # The intermediate loss's frozen teacher only: no logits pass again.
  assert len(built) == 1
  for a, b in zip(student_weights(task, tmp_path / "reference", 8),
                  student_weights(task, tmp_path / "killed", 8)):
    np.testing.assert_allclose(a, b, atol=1e-6)


def _run_tool(task, out, *flags):
  """`python -m tools.distill` on the task's files into `out`."""
  import pathlib
  import subprocess
  import sys
  root = str(pathlib.Path(__file__).resolve().parents[4])
  return subprocess.run(
      [sys.executable, "-m", "tools.distill", f"--teacher={task['teacher']}",
       f"--train_file={task['train']}", f"--dev_file={task['dev']}",
       f"--spm_model_file={task['spm']}", f"--output_dir={out}",
       "--do_train", "--do_eval", *flags],
      capture_output=True, text=True, timeout=300, cwd=root,
      env=dict(os.environ, PYTHONPATH=root))


def test_the_command_line_refuses_in_one_line_and_writes_nothing(task,
                                                                   tmp_path):
  out = tmp_path / "never"
  proc = _run_tool(task, out, "--student_layers=7")
  assert proc.returncode == 1
  lines = [line for line in proc.stderr.splitlines() if line.strip()]
  assert len(lines) == 1 and "--student_layers=7" in lines[0], proc.stderr
  assert not out.exists()


def test_the_command_line_takes_the_teachers_config(task, tmp_path):
  """tools.distill without --albert_config_file (the teacher's is the
  student's) trains, evaluates beside the teacher and exports: the config
  survives the recipe's second reading of the flags."""
  import json
  out = tmp_path / "run"
  proc = _run_tool(
      task, out, "--student_layers=1", f"--export_dir={tmp_path / 'export'}",
      f"--max_seq_length={kit.SEQ}", "--train_step=2", "--warmup_step=1",
      "--save_checkpoints_steps=2", "--train_batch_size=32")
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads((out / "eval_results.json").read_text())
  assert 0 <= results["accuracy"] <= 1 and "teacher/accuracy" in results
  assert json.loads((out / "albert_config.json").read_text())[
      "num_hidden_layers"] == 1
  assert (tmp_path / "export" / "saved_model.pb").exists()


@pytest.mark.slow
def test_sigkill_during_distillation_then_rerun_gives_the_same_weights(
    task, tmp_path):
  """`python -m tools.distill` with dropout on (the teacher's config: 0.1)
  and the intermediate loss, killed with SIGKILL once ckpt-10 is the
  latest checkpoint, then rerun: the rerun resumes (not a fresh start) and
  its ckpt-30 equals an uninterrupted run's."""
  import pathlib
  import signal
  import subprocess
  import sys
  import time
  root = str(pathlib.Path(__file__).resolve().parents[4])

  def start(out):
    return subprocess.Popen(
        [sys.executable, "-m", "tools.distill", f"--teacher={task['teacher']}",
         f"--train_file={task['train']}", f"--dev_file={task['dev']}",
         f"--spm_model_file={task['spm']}", f"--output_dir={out}",
         "--do_train", "--student_layers=1", f"--max_seq_length={kit.SEQ}",
         "--train_step=30", "--warmup_step=2", "--save_checkpoints_steps=10",
         "--iterations_per_loop=5", "--train_batch_size=16", "--seed=5",
         "--intermediate_loss=hidden_projection"],
        cwd=root, env=dict(os.environ, PYTHONPATH=root),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

  reference, killed = tmp_path / "reference", tmp_path / "killed"
  uninterrupted, run = start(reference), start(killed)
  deadline = time.time() + 300
  while tf.train.latest_checkpoint(str(killed)) is None:
    assert run.poll() is None, run.stderr.read()[-3000:]
    assert time.time() < deadline, "ckpt-10 never written"
    time.sleep(0.01)
  run.send_signal(signal.SIGKILL)
  run.wait()
  latest = tf.train.latest_checkpoint(str(killed))
  assert not latest.endswith("ckpt-30"), latest
  rerun = start(killed)
  logs = {}
  for name, proc in (("uninterrupted", uninterrupted), ("rerun", rerun)):
    _, logs[name] = proc.communicate(timeout=300)
    assert proc.returncode == 0, logs[name][-3000:]
  assert f"resumed from {latest}" in logs["rerun"], logs["rerun"][-3000:]
  for a, b in zip(student_weights(task, reference, 30),
                  student_weights(task, killed, 30)):
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_an_export_teaches_as_its_run_directory_does(task, tmp_path):
  settings = dict(train_step=2, save_checkpoints_steps=2, warmup_step=1)
  from_dir = distil(task, tmp_path / "from_dir", **settings)
  from_export = distil(task, tmp_path / "from_export",
                        teacher=task["teacher_export"], **settings)
  for split in ("train", "dev"):
    np.testing.assert_allclose(from_export["teacher_logits"][split],
                               from_dir["teacher_logits"][split], atol=1e-5)
  assert (from_export["eval"]["teacher/accuracy"] ==
          from_dir["eval"]["teacher/accuracy"])


def test_a_vocabulary_other_than_the_export_teachers_is_refused(task,
                                                                 tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(
      ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
      [f"w{i}" for i in range(1995)]) + "\n", encoding="utf-8")
  out = tmp_path / "never"
  with pytest.raises(UserInputError, match="differs from the teacher's "
                     "vocabulary"):
    distil(task, out, teacher=task["teacher_export"], vocab_file=str(vocab))
  assert not out.exists()


def test_a_narrower_student_starts_from_its_init_checkpoint(task, tmp_path):
  """--student_config (H=16 under the teacher's 32) with
  --student_init_checkpoint and hidden_projection: trains from the
  checkpoint's encoder, evaluates beside the teacher, exports."""
  from albert_tf import AlbertConfig
  from albert_tf import AlbertEncoder
  from albert_tf import AlbertPretrainer
  narrow = kit.tiny_config(tmp_path / "narrow.json", hidden_size=16)
  init = AlbertEncoder(AlbertConfig.from_json_file(narrow))
  prefix = tf.train.Checkpoint(model=AlbertPretrainer(init)).write(
      str(tmp_path / "init" / "ckpt"))
  out, export = tmp_path / "narrow_run", str(tmp_path / "narrow_export")
  result = distil(task, out, export_dir=export, student_layers=0,
                   student_config=narrow, student_init_checkpoint=prefix,
                   intermediate_loss="hidden_projection", train_step=2,
                   save_checkpoints_steps=2, warmup_step=1)
  assert "accuracy" in result["eval"] and "teacher/accuracy" in result["eval"]
  student = teacher_lib.build_teacher_model(teacher_lib.read_teacher(
      str(out)))
  assert student.encoder.config.hidden_size == 16
  # Two small steps from the checkpoint: near it, far from a fresh draw.
  moved = [np.abs(a - b).max() for a, b in zip(
      student.encoder.get_weights(), init.get_weights())
           if a.dtype == np.float32]
  assert max(moved) < 0.01 and max(moved) > 0
  with open(os.path.join(export, "assets", "distillation.json"),
            encoding="utf-8") as f:
    assert json.load(f)["student_hidden_size"] == 16


@pytest.mark.slow
def test_the_students_litert_file_answers_like_its_savedmodel(task, student,
                                                              tmp_path):
  """What tools.export_tflite runs on the student's export: float LiteRT
  within 1e-4 of the SavedModel, and the dev accuracy of the run."""
  from albert_tf.exports.litert import report as tflite_report
  result = tflite_report.export_and_report(
      student["export"], str(tmp_path / "student.tflite"),
      seq_length=kit.SEQ, eval_data=task["dev"])
  assert result["max_difference"] <= 1e-4
  assert result["metrics"]["none"]["accuracy"] == pytest.approx(
      student["eval"]["accuracy"], abs=0.02)
