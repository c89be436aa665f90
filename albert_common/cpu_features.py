"""What the CPU this process runs on is, from /proc/cpuinfo (Linux).

Standard library only: the tools read it before TensorFlow loads, and the
benchmarks' machine labels (benchmarks/common.py) read it here too.

  cpu_model()         "AMD EPYC 7B13" ("" where there is no cpuinfo)
  cpu_flags()         frozenset({"avx2", "avx512_vnni", ...})
  has_vnni(flags)     int8 dot products in one instruction (AVX-512 VNNI or
                      AVX-VNNI): what makes LiteRT's int8 kernels fast
"""

from typing import Dict, FrozenSet, Optional

CPUINFO = "/proc/cpuinfo"
# x86 flags of an int8 dot-product instruction (VPDPBUSD).
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")


def read_cpuinfo() -> str:
  """/proc/cpuinfo's text ("" where there is none)."""
  try:
    with open(CPUINFO, encoding="utf-8", errors="replace") as f:
      return f.read()
  except OSError:
    return ""


def cpuinfo_fields(cpuinfo: Optional[str] = None) -> Dict[str, str]:
  """The "key: value" lines of the first processor's section (all
  processors of one machine are alike here)."""
  if cpuinfo is None:
    cpuinfo = read_cpuinfo()
  fields = {}
  for line in cpuinfo.splitlines():
    if not line.strip() and fields:
      break
    if ":" in line:
      key, value = line.split(":", 1)
      fields.setdefault(key.strip(), value.strip())
  return fields


def cpu_model(cpuinfo: Optional[str] = None) -> str:
  """The CPU's model name ("" where cpuinfo has none)."""
  return cpuinfo_fields(cpuinfo).get("model name", "")


def cpu_flags(cpuinfo: Optional[str] = None) -> FrozenSet[str]:
  """The CPU's feature flags (x86 "flags"; ARM "Features")."""
  fields = cpuinfo_fields(cpuinfo)
  return frozenset(fields.get("flags", fields.get("Features", "")).split())


def has_vnni(flags: FrozenSet[str]) -> bool:
  return any(flag in flags for flag in VNNI_FLAGS)
