"""The one-line hint export_tflite and export_onnx print on a CPU without
VNNI: which int8 runtime serves faster there (docs/litert.md, "Which
runtime on which CPU").

On an AVX2-only AMD EPYC, LiteRT's dynamic int8 ALBERT-base took 1.40x
ONNX Runtime int8's time at batch 1, sequence 128 (165 vs 118 ms) and
1.32x at batch 32; on an AVX-512 VNNI EPYC it took 0.86x.
"""

from typing import Optional

from albert_common import cpu_features


def int8_runtime_hint(cpuinfo: Optional[str] = None) -> str:
  """The hint for the CPU `cpuinfo` describes (this one's by default): ""
  unless it is an x86 CPU without VNNI."""
  flags = cpu_features.cpu_flags(cpuinfo)
  if "avx2" not in flags or cpu_features.has_vnni(flags):
    return ""  # not x86 (or older than AVX2), or LiteRT's int8 is fast
  return ("hint: this CPU has no VNNI (AVX-512 VNNI / AVX-VNNI): here ONNX "
          "Runtime int8 serves ALBERT faster than LiteRT dynamic int8 "
          "(LiteRT took 1.40x its time at batch 1 x 128 on an AVX2-only "
          "AMD EPYC, 0.86x with VNNI); see docs/litert.md, \"Which runtime "
          "on which CPU\"")
