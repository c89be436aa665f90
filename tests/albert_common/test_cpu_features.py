"""The CPU read from /proc/cpuinfo text, and the export tools' int8 hint on
a CPU without VNNI (crafted cpuinfo of the machines the docs quote)."""

import pathlib

from albert_common import cpu_features
from albert_tf.exports.cpu_hint import int8_runtime_hint

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _cpuinfo(model: str, flags: str, key: str = "flags") -> str:
  """Two processors' sections, as Linux writes them."""
  return "".join(f"processor\t: {n}\nmodel name\t: {model}\n{key}\t\t: "
                 f"{flags}\n\n" for n in range(2))


AVX2_EPYC = _cpuinfo("AMD EPYC 7B12", "fpu sse4_2 avx fma avx2 bmi2")
VNNI_EPYC = _cpuinfo("AMD EPYC 9B14", "fpu avx2 avx512f avx512_vnni")
AVX_VNNI = _cpuinfo("12th Gen Intel(R) Core(TM) i7-1260P",
                    "fpu avx2 avx_vnni")
ARM = "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU part\t: 0xd0c\n"


def test_cpuinfo_fields_of_the_first_processor():
  assert cpu_features.cpu_model(AVX2_EPYC) == "AMD EPYC 7B12"
  assert cpu_features.cpu_flags(AVX2_EPYC) == {
      "fpu", "sse4_2", "avx", "fma", "avx2", "bmi2"}
  assert cpu_features.cpu_flags(ARM) == {"fp", "asimd", "asimddp"}
  assert cpu_features.cpu_model("") == ""
  assert cpu_features.cpu_flags("") == frozenset()
  assert not cpu_features.has_vnni(cpu_features.cpu_flags(AVX2_EPYC))
  assert cpu_features.has_vnni(cpu_features.cpu_flags(VNNI_EPYC))
  assert cpu_features.has_vnni(cpu_features.cpu_flags(AVX_VNNI))


def test_the_hint_is_one_line_only_without_vnni():
  hint = int8_runtime_hint(AVX2_EPYC)
  assert hint.startswith("hint: this CPU has no VNNI") and "\n" not in hint
  assert "1.40x" in hint and "docs/litert.md" in hint
  # The section it names exists.
  assert "## Which runtime on which CPU" in (
      ROOT / "docs" / "litert.md").read_text()
  for cpuinfo in (VNNI_EPYC, AVX_VNNI, ARM, ""):
    assert int8_runtime_hint(cpuinfo) == ""


def test_both_export_tools_print_it():
  for tool in ("export_tflite", "export_onnx"):
    source = (ROOT / "tools" / f"{tool}.py").read_text()
    assert "int8_runtime_hint()" in source, tool
