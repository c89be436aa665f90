"""Parameter breakdown, FLOPs per token, and the model_summary CLI."""

import dataclasses
import os
import subprocess
import sys

from albert_tf import AlbertConfig
from albert_tf import AlbertEncoder
from albert_tf import parameters_and_flops

ROOT = os.path.abspath(os.path.join(__file__, "../../../.."))
BASE = os.path.join(ROOT, "configs", "albert_base.json")


def test_flops_of_albert_base_at_512():
  # By hand: projection 2*128*768 = 196,608; per block 8*768^2 + 4*768*3072
  # + 4*512*768 = 15,728,640, times 12; pooler 2*768^2/512 = 2,304.
  flops = parameters_and_flops.flops_per_token(
      AlbertConfig.from_json_file(BASE), 512)
  assert flops["encoder_forward"] == 196_608 + 12 * 15_728_640 + 2_304
  assert flops["encoder_training"] == 3 * flops["encoder_forward"]
  # MLM head: 3 * (2*768*128 + 2*128*30000).
  assert flops["mlm_head_training"] == 3 * (196_608 + 7_680_000)


def test_sharing_does_not_change_flops_and_inner_groups_do():
  config = AlbertConfig.from_json_file(BASE)
  shared = parameters_and_flops.flops_per_token(config, 128)
  unshared = parameters_and_flops.flops_per_token(
      dataclasses.replace(config, share_parameters="none"), 128)
  assert shared == unshared
  doubled = parameters_and_flops.flops_per_token(
      dataclasses.replace(config, inner_group_num=2), 128)
  assert doubled["encoder_forward"] > 1.99 * shared["encoder_forward"]


def test_breakdown_rows(tiny_config):
  config = dataclasses.replace(tiny_config, num_hidden_layers=4,
                               num_hidden_groups=2,
                               share_parameters="attention")
  rows = dict(parameters_and_flops.parameter_breakdown(AlbertEncoder(config)))
  # Two shared attention sublayers (one per group), four per-layer FFNs.
  assert sorted(k for k in rows if "attention" in k) == [
      "group_0_inner_0_attention", "group_1_inner_0_attention"]
  assert sorted(k for k in rows if "ffn" in k) == [
      f"layer_{i}_inner_0_ffn" for i in range(4)]
  h, i = 32, 64
  assert rows["group_0_inner_0_attention"] == 4 * (h * h + h) + 2 * h
  assert rows["layer_3_inner_0_ffn"] == h * i + i + i * h + h + 2 * h
  assert rows["pooler"] == h * h + h
  assert rows["embeddings"] == (97 + 40 + 2) * 16 + 2 * 16 + 16 * h + h
  assert rows["total"] == sum(v for k, v in rows.items() if k != "total")


def test_cli_prints_table_and_rejects_missing_file(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "tools.model_summary",
       f"--albert_config_file={BASE}", "--max_seq_length=128"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr
  assert "total" in result.stdout and "11,683,584" in result.stdout
  missing = str(tmp_path / "missing.json")
  result = subprocess.run(
      [sys.executable, "-m", "tools.model_summary",
       f"--albert_config_file={missing}"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode == 1
  assert result.stderr.strip().splitlines() == [
      f"error: cannot read ALBERT config {missing}: No such file or directory"]
