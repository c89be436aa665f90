"""Checks of the flags, config files and SentencePiece model: each fails in
under 3 s from process start with one `error:` line (before TensorFlow is
imported); defaults that conflict with a flag the user set are derived from
it and logged, a conflicting value the user set stays an error."""

import concurrent.futures
import json
import logging
import os
import re
import subprocess
import sys

import pytest

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))


@pytest.fixture(scope="module")
def files(tmp_path_factory, spm_model):
  """Configs (64 positions; vocab 2000 = the spm model's, and 1000), a GLUE
  directory, a folder that is not a directory of anything useful."""
  root = tmp_path_factory.mktemp("flags")
  tiny = dict(embedding_size=16, hidden_size=32, num_hidden_layers=2,
              num_attention_heads=2, intermediate_size=64,
              max_position_embeddings=64)
  paths = dict(spm=spm_model, root=str(root))
  for name, vocab in (("config", 2000), ("small_vocab", 1000)):
    paths[name] = str(root / f"{name}.json")
    AlbertConfig(vocab_size=vocab, **tiny).to_json_file(paths[name])
  paths["groups"] = str(root / "groups.json")
  with open(paths["groups"], "w") as f:
    json.dump(dict(AlbertConfig(**tiny).to_dict(), num_hidden_groups=3), f)
  glue_dir = root / "SST-2"
  glue_dir.mkdir()
  (glue_dir / "train.tsv").write_text("sentence\tlabel\nfine\t1\n")
  (glue_dir / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
  paths["glue"] = str(glue_dir)
  # A SavedModel (no signatures, as a TF Hub encoder) without our config
  # asset: an empty saved_model.pb parses as one.
  (root / "savedmodel_no_config").mkdir()
  (root / "savedmodel_no_config" / "saved_model.pb").write_bytes(b"")
  paths["savedmodel_no_config"] = str(root / "savedmodel_no_config")
  return paths


def _cases(p):
  """name -> (module, args, pattern of the error line, pattern that must be
  logged before it or None)."""
  shared = [f"--spm_model_file={p['spm']}",
            f"--output_dir={p['root']}/out", "--do_train"]
  glue = ["tools.run_classifier", "--task_name=SST-2",
          f"--data_dir={p['glue']}", *shared]
  squad = ["tools.run_squad", f"--albert_config_file={p['config']}", *shared]
  race = ["tools.run_race", f"--data_dir={p['root']}",
          f"--albert_config_file={p['config']}", *shared]
  pretrain = ["tools.run_pretraining", f"--input_file={p['root']}/x",
              f"--output_dir={p['root']}/pt", "--max_seq_length=64"]
  return {
      # The vocabulary is checked before the checkpoint is read (here it
      # does not even exist); max_seq_length (512) is derived from the
      # config's 64 positions first.
      "vocabulary_before_checkpoint": (
          *glue, f"--albert_config_file={p['small_vocab']}",
          f"--init_checkpoint={p['root']}/no_such_checkpoint",
          r"spm.* has 2000 pieces, more than the model's vocab_size \(1000\)",
          r"using --max_seq_length=64 \(max_position_embeddings of "),
      "missing_checkpoint": (
          *glue, f"--albert_config_file={p['config']}",
          f"--init_checkpoint={p['root']}/no_such_checkpoint",
          r"--init_checkpoint=.*no_such_checkpoint does not exist", None),
      "no_action": (
          "tools.run_classifier", "--task_name=SST-2",
          f"--data_dir={p['glue']}", f"--spm_model_file={p['spm']}",
          f"--output_dir={p['root']}/out",
          f"--albert_config_file={p['config']}",
          "at least one of --do_train, --do_eval, --do_predict", None),
      "unknown_task": (
          "tools.run_classifier", "--task_name=SST-3",
          f"--data_dir={p['glue']}", *shared, "SST-3", None),
      "missing_data_dir": (
          "tools.run_classifier", "--task_name=SST-2",
          f"--data_dir={p['root']}/nope", *shared,
          f"--albert_config_file={p['config']}",
          r"--data_dir=.*nope is not a directory", None),
      "missing_config": (
          *glue, f"--albert_config_file={p['root']}/nope.json",
          r"--albert_config_file=.*nope.json does not exist", None),
      "bad_config": (
          *glue, f"--albert_config_file={p['groups']}",
          r"groups.json: num_hidden_layers \(2\) must be divisible by "
          r"num_hidden_groups \(3\)", None),
      "savedmodel_without_config": (
          *glue, f"--init_savedmodel={p['savedmodel_no_config']}",
          r"--init_savedmodel=.*savedmodel_no_config has no "
          r"assets/albert_config.json", None),
      "user_max_seq_length_too_long": (
          *glue, f"--albert_config_file={p['config']}",
          "--max_seq_length=128",
          r"--max_seq_length=128 exceeds max_position_embeddings=64", None),
      "user_warmup_not_below_train_step": (
          *glue, f"--albert_config_file={p['config']}", "--train_step=40",
          "--warmup_step=40", r"--warmup_step=40 must be in \[0, "
          r"--train_step=40\)", None),
      "length_buckets_not_increasing": (
          *glue, f"--albert_config_file={p['config']}",
          "--length_buckets=32,16",
          r"--length_buckets=32,16: lengths must be strictly increasing "
          r"\(32 then 16\)", None),
      # Checked after --max_seq_length is derived from the config (64).
      "length_buckets_above_max_seq_length": (
          *glue, f"--albert_config_file={p['config']}",
          "--length_buckets=32,128",
          r"--length_buckets=32,128: 128 exceeds --max_seq_length=64",
          r"using --max_seq_length=64"),
      "squad_query_longer_than_sequence": (
          *squad, f"--train_file={p['root']}/train.json",
          "--max_seq_length=64", "--max_query_length=64",
          r"--max_seq_length \(64\) must exceed --max_query_length \(64\)",
          None),
      "squad_missing_train_file": (
          *squad, f"--train_file={p['root']}/nope.json",
          "--max_seq_length=64", r"--train_file=.*nope.json does not exist",
          r"using --max_query_length=32 \(half of --max_seq_length\)"),
      "race_qa_longer_than_sequence": (
          *race, "--max_qa_length=100",
          r"--max_qa_length \(100\) must be in \[1, --max_seq_length - 3 = "
          r"61\]", r"using --max_seq_length=64"),
      "pretraining_warmup_not_below_steps": (
          *pretrain, f"--albert_config_file={p['config']}",
          "--num_train_steps=40", "--num_warmup_steps=40",
          r"--num_warmup_steps \(40\) must be in \[0, num_train_steps=40\)",
          None),
      "pretraining_sequence_too_long": (
          *pretrain[:-1], f"--albert_config_file={p['config']}",
          "--max_seq_length=128",
          r"--max_seq_length=128 exceeds max_position_embeddings=64", None),
      "pretraining_accumulation_below_one": (
          *pretrain, f"--albert_config_file={p['config']}",
          "--gradient_accumulation_steps=0",
          r"^error: --gradient_accumulation_steps must be at least 1, got 0$",
          None),
      "accumulation_not_dividing_the_batch": (
          *glue, f"--albert_config_file={p['config']}",
          "--train_batch_size=32", "--gradient_accumulation_steps=3",
          r"^error: --gradient_accumulation_steps=3 does not divide "
          r"--train_batch_size=32 \(micro-batches are equal slices of the "
          r"update's batch\)$", None),
      "export_vocabulary": (
          "tools.export_savedmodel",
          f"--albert_config_file={p['small_vocab']}",
          f"--init_checkpoint={p['root']}/no_such_checkpoint",
          f"--spm_model_file={p['spm']}", f"--export_dir={p['root']}/exp",
          r"has 2000 pieces, more than the config's vocab_size \(1000\)",
          r"using --seq_length=64 \(max_position_embeddings of "),
      "convert_bad_config": (
          "tools.convert_checkpoint", f"--albert_config_file={p['groups']}",
          f"--input_checkpoint={p['root']}/nope",
          f"--output_checkpoint={p['root']}/converted",
          r"groups.json: num_hidden_layers \(2\) must be divisible", None),
      "convert_keras_hub_without_spm": (
          "tools.convert_checkpoint", f"--albert_config_file={p['config']}",
          f"--input_checkpoint={p['root']}/nope",
          f"--output_checkpoint={p['root']}/preset",
          "--output_format=keras_hub",
          "--output_format=keras_hub needs --spm_model_file", None),
      "model_summary_missing_config": (
          "tools.model_summary", f"--albert_config_file={p['root']}/nope.json",
          r"nope.json", None),
  }


@pytest.fixture(scope="module")
def cli_results(files, tmp_path_factory):
  """Each case's CLI run where importing TensorFlow fails: a check that
  fails fast fails before TensorFlow loads (about 5 s), whatever the
  machine's load."""
  cases = _cases(files)
  blocker = tmp_path_factory.mktemp("no_tensorflow") / "tensorflow"
  blocker.mkdir()
  (blocker / "__init__.py").write_text(
      'raise ImportError("TensorFlow was imported before the check")\n')
  env = dict(os.environ, PYTHONPATH=f"{blocker.parent}{os.pathsep}{ROOT}")

  def run(item):
    name, (module, *args) = item
    result = subprocess.run([sys.executable, "-m", module, *args[:-2]],
                            cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    return name, (result, *args[-2:])

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    return dict(pool.map(run, cases.items()))


CASES = ("vocabulary_before_checkpoint", "missing_checkpoint", "no_action",
         "unknown_task",
         "missing_data_dir", "missing_config", "bad_config",
         "savedmodel_without_config", "user_max_seq_length_too_long",
         "user_warmup_not_below_train_step",
         "length_buckets_not_increasing",
         "length_buckets_above_max_seq_length",
         "squad_query_longer_than_sequence", "squad_missing_train_file",
         "race_qa_longer_than_sequence", "pretraining_warmup_not_below_steps",
         "pretraining_sequence_too_long", "pretraining_accumulation_below_one",
         "accumulation_not_dividing_the_batch", "export_vocabulary",
         "convert_bad_config", "convert_keras_hub_without_spm",
         "model_summary_missing_config")


def test_every_case_is_run(files):
  assert sorted(CASES) == sorted(_cases(files))


@pytest.mark.parametrize("case", CASES)
def test_check_fails_fast_with_one_line(cli_results, case):
  result, pattern, logged = cli_results[case]
  assert "TensorFlow was imported" not in result.stderr, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.returncode == 1, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert re.search(pattern, errors[0]), errors[0]
  assert result.stderr.rstrip().endswith(errors[0]), result.stderr[-3000:]
  if logged:
    assert re.search(logged, result.stderr), result.stderr[-3000:]


def test_early_check_modules_do_not_import_tensorflow():
  code = ("import sys\n"
          "import albert_tf.checkpoints.configs, albert_tf.config\n"
          "import albert_tf.exports, albert_tf.exports.options\n"
          "import albert_tf.training.finetuning.params\n"
          "import albert_tf.training.finetuning.task_settings\n"
          "import data_pipeline.tasks.glue.examples\n"
          "import data_pipeline.tasks.glue.features\n"
          "import data_pipeline.tasks.glue.metrics\n"
          "import data_pipeline.tokenization.sentencepiece_tokenizer\n"
          "import tools.support.settings_flags\n"
          "assert 'tensorflow' not in sys.modules\n")
  subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                 env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)


# --- derived defaults, in process ---------------------------------------------


def _params(files, **kwargs):
  values = dict(output_dir=files["root"] + "/out",
                albert_config_file=files["config"],
                spm_model_file=files["spm"], do_train=True,
                max_seq_length=512, train_step=40, warmup_step=1256)
  values.update(kwargs)
  return finetuning_params.FinetuningParams.from_flat(**values)


SST2 = task_settings.task_defaults("SST-2")  # 1256 warmup of 20935 steps


def test_defaults_derived_from_the_flags_the_user_set(files, caplog):
  caplog.set_level(logging.INFO, logger="absl")
  params = finetuning_params.prepare(
      _params(files), user_set={"train_step"}, recipe=SST2).params
  assert params.max_seq_length == 64  # the config's positions
  assert params.warmup_step == int(40 * 1256 / 20935) == 2
  assert "using --max_seq_length=64 (max_position_embeddings of" in \
      caplog.text
  assert "using --warmup_step=2 (6% of --train_step" in caplog.text

  squad = task_settings.derive_squad(
      params, task_settings.SquadOptions(max_query_length=64), {"train_step"})
  assert squad.max_query_length == 32
  race = task_settings.derive_race(
      params, task_settings.RaceOptions(max_qa_length=128), set())
  assert race.max_qa_length == 32
  assert "using --max_query_length=32 (half of --max_seq_length)" in \
      caplog.text
  assert "using --max_qa_length=32 (half of --max_seq_length)" in caplog.text

  # Nothing to derive when the defaults fit.
  params = finetuning_params.prepare(
      _params(files, max_seq_length=64, train_step=20935), user_set=set(),
      recipe=SST2).params
  assert (params.max_seq_length, params.warmup_step) == (64, 1256)
  assert task_settings.derive_race(
      params, task_settings.RaceOptions(max_qa_length=16), set()
  ).max_qa_length == 16


def test_a_keras_hub_preset_config_is_its_architecture(files, tmp_path):
  """--albert_config_file may be a keras-hub preset's config.json (what an
  --init_checkpoint preset folder gives): read as keras-hub's, not as an
  official file with every field missing (the default, base config)."""
  from albert_tf.checkpoints import configs
  config = AlbertConfig.from_json_file(files["config"])
  path = tmp_path / "config.json"
  path.write_text(json.dumps(dict(
      module="keras_hub.src.models.albert.albert_backbone",
      class_name="AlbertBackbone", registered_name="keras_hub>AlbertBackbone",
      config=configs.backbone_kwargs(config))))
  loaded = finetuning_params.load_config(
      _params(files, albert_config_file=str(path)))
  assert not configs.architecture_differences(loaded, config)
  assert (loaded.hidden_size, loaded.vocab_size) == (32, 2000)


def test_conflicting_values_the_user_set_stay_errors(files):
  with pytest.raises(UserInputError, match="--max_seq_length=512 exceeds"):
    finetuning_params.prepare(
        _params(files), user_set={"max_seq_length", "train_step"},
        recipe=SST2)
  with pytest.raises(UserInputError,
                     match=r"--warmup_step=1256 must be in \[0, "
                     r"--train_step=40\)"):
    finetuning_params.prepare(
        _params(files, max_seq_length=64),
        user_set={"warmup_step", "train_step"}, recipe=SST2)
  # Library callers (user_set=None) get no derivation at all.
  with pytest.raises(UserInputError, match="--max_seq_length=512 exceeds"):
    finetuning_params.prepare(_params(files))
  params = _params(files, max_seq_length=64, warmup_step=2)
  squad = task_settings.SquadOptions(max_query_length=64, train_file="x")
  squad = task_settings.derive_squad(params, squad, {"max_query_length"})
  with pytest.raises(UserInputError, match=r"--max_seq_length \(64\) must "
                     r"exceed --max_query_length \(64\)"):
    task_settings.check_squad(params, squad)
  race = task_settings.derive_race(
      params, task_settings.RaceOptions(data_dir=files["root"],
                                       max_qa_length=62), {"max_qa_length"})
  with pytest.raises(UserInputError, match=r"--max_qa_length \(62\)"):
    task_settings.check_race(params, race)


def test_pretraining_warmup_derived_from_a_short_num_train_steps(files):
  """tools.run_pretraining: --num_warmup_steps (3125 by default) follows a
  --num_train_steps the user set below it: 2.5% of it, logged."""
  code = ("import sys\n"
          "from absl import flags, logging\n"
          "from tools import run_pretraining\n"
          "flags.FLAGS(sys.argv)\n"
          "logging.use_absl_handler()\n"
          "logging.set_verbosity(logging.INFO)\n"
          "from tools.support import settings_flags\n"
          "from albert_tf.training.pretraining import params as p\n"
          "params, user_set = settings_flags.read_settings("
          "p.PretrainingParams)\n"
          "run = p.prepare(params, user_set)\n"
          "print(run.params.num_warmup_steps, flags.FLAGS.num_warmup_steps)\n"
          "assert 'tensorflow' not in sys.modules\n")
  result = subprocess.run(
      [sys.executable, "-c", code, "--input_file=x", "--output_dir=y",
       f"--albert_config_file={files['config']}", "--max_seq_length=64",
       "--num_train_steps=400"], cwd=ROOT, capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
  assert result.returncode == 0, result.stderr[-3000:]
  # Derived once, logged once; the flags themselves stay as parsed.
  assert result.stdout.split() == ["10", "3125"]
  assert result.stderr.count("using --num_warmup_steps") == 1
  assert "using --num_warmup_steps=10 (2.5% of --num_train_steps" in \
      result.stderr


def test_results_line_is_sorted_with_floats_to_four_decimals(capsys):
  from tools.support import settings_flags
  settings_flags.print_results(
      {"f1": 87.123456, "exact_match": 80.0, "num_examples": 12})
  settings_flags.print_results({})
  assert capsys.readouterr().out == (
      "exact_match=80.0000 f1=87.1235 num_examples=12\n")
