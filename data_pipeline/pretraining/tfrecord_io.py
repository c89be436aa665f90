"""`tf.train.Example` encoding and TFRecord framing without TensorFlow.

Worker processes of `create_pretraining_data` import neither TensorFlow (5 s
per process) nor its protobuf classes: they encode Examples directly in the
protobuf wire format (int64 lists packed, as proto3 serialises them) and frame
them as TFRecords (length, masked CRC-32C of the length, data, masked CRC-32C
of the data). Both steps are vectorised with numpy over a batch of records;
tests check the result parses with `tf.io.parse_example` and that the framing
is byte-identical to `tf.io.TFRecordWriter`.
"""

import struct
from typing import Dict, List, Sequence, Tuple

import numpy as np

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected.
_MASK_DELTA = 0xA282EAD8


def _crc_tables():
  """(byte table [256], word tables A, B [65536]) for CRC-32C.

  A word step is linear in the state: after xoring in 4 bytes, the new state
  is A[state & 0xFFFF] ^ B[state >> 16] (4 zero bytes from each half).
  """
  table = np.arange(256, dtype=np.uint32)
  for _ in range(8):
    table = np.where(table & 1, (table >> 1) ^ np.uint32(_CRC32C_POLY),
                     table >> 1).astype(np.uint32)

  def four_zero_bytes(state):
    for _ in range(4):
      state = table[state & 0xFF] ^ (state >> 8)
    return state

  half = np.arange(1 << 16, dtype=np.uint32)
  return table, four_zero_bytes(half), four_zero_bytes(half << 16)


_CRC_TABLE, _CRC_LOW, _CRC_HIGH = _crc_tables()


def crc32c_batch(records: Sequence[bytes]) -> np.ndarray:
  """CRC-32C of every record, vectorised across records.

  Records are laid out as columns of 32-bit words, longest first, so the
  records still running at word c are a prefix of the columns; the last
  1-3 bytes of each record are then folded in one byte at a time.

  Args:
    records: n byte strings.

  Returns:
    uint32 array [n].
  """
  n = len(records)
  state = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
  if n == 0:
    return state
  lengths = np.fromiter((len(r) for r in records), dtype=np.int64, count=n)
  order = np.argsort(-lengths, kind="stable")
  sorted_lengths = lengths[order]
  words = sorted_lengths // 4
  max_words = int(words[0])
  stride = 4 * max_words + 4
  padded = np.zeros((n, stride), dtype=np.uint8)  # Zero-padded bytes.
  for row, i in enumerate(order.tolist()):
    padded[row, :sorted_lengths[row]] = np.frombuffer(records[i], np.uint8)
  columns = np.ascontiguousarray(
      padded[:, :4 * max_words].view("<u4").T)  # [max_words, n]
  active = n - np.searchsorted(words[::-1], np.arange(max_words),
                               side="right")  # Records with > c words.
  low, high = _CRC_LOW, _CRC_HIGH
  for c in range(max_words):
    k = int(active[c])
    x = state[:k] ^ columns[c, :k]
    state[:k] = low[x & 0xFFFF] ^ high[x >> 16]
  table = _CRC_TABLE
  for t in range(3):
    rows = np.flatnonzero(sorted_lengths % 4 > t)
    if not rows.size:
      break
    byte = padded[rows, 4 * words[rows] + t]
    s = state[rows]
    state[rows] = table[(s ^ byte) & 0xFF] ^ (s >> 8)
  out = np.empty(n, dtype=np.uint32)
  out[order] = state ^ np.uint32(0xFFFFFFFF)
  return out


def masked_crc(crc: np.ndarray) -> np.ndarray:
  """TFRecord's CRC masking: rotate right by 15 bits, add a constant."""
  crc = np.asarray(crc, dtype=np.uint32)
  rotated = (crc >> np.uint32(15)) | (crc << np.uint32(17))
  return (rotated.astype(np.uint64) + _MASK_DELTA).astype(np.uint32)


def frame_records(payloads: Sequence[bytes]) -> bytes:
  """TFRecord bytes of `payloads`, exactly as `tf.io.TFRecordWriter` writes."""
  if not payloads:
    return b""
  headers = [struct.pack("<Q", len(p)) for p in payloads]
  header_crcs = masked_crc(crc32c_batch(headers))
  data_crcs = masked_crc(crc32c_batch(payloads))
  parts = []
  for header, hcrc, payload, dcrc in zip(headers, header_crcs.tolist(),
                                         payloads, data_crcs.tolist()):
    parts.append(header)
    parts.append(struct.pack("<I", hcrc))
    parts.append(payload)
    parts.append(struct.pack("<I", dcrc))
  return b"".join(parts)


def _varint(value: int) -> bytes:
  out = bytearray()
  while True:
    bits = value & 0x7F
    value >>= 7
    if value:
      out.append(bits | 0x80)
    else:
      out.append(bits)
      return bytes(out)


def varint_rows(values: np.ndarray) -> Tuple[bytes, np.ndarray]:
  """Varint-encodes every row of a non-negative int array.

  Args:
    values: int array [n, m], 0 <= value < 2**28.

  Returns:
    (stream, offsets): the rows' encodings concatenated, and int64 [n + 1]
    offsets, row i being stream[offsets[i]:offsets[i + 1]].
  """
  v = np.asarray(values).astype(np.uint32)
  if v.size and int(v.max()) >= 1 << 28:
    raise ValueError("varint_rows supports values below 2**28")
  nbytes = (1 + (v >= 1 << 7).astype(np.int64) + (v >= 1 << 14) +
            (v >= 1 << 21))  # [n, m]
  flat_v = v.ravel()
  flat_n = nbytes.ravel()
  starts = np.cumsum(flat_n) - flat_n
  out = np.empty(int(flat_n.sum()), dtype=np.uint8)
  # Byte k of every value that has more than k bytes.
  for k in range(4):
    if k:
      keep = flat_n > k
      if not keep.any():
        break
      flat_v, flat_n, starts = flat_v[keep], flat_n[keep], starts[keep]
    out[starts + k] = (((flat_v >> (7 * k)) & 0x7F) |
                       ((flat_n > k + 1) * 0x80)).astype(np.uint8)
  offsets = np.zeros(v.shape[0] + 1, dtype=np.int64)
  np.cumsum(nbytes.sum(axis=1), out=offsets[1:])
  return out.tobytes(), offsets


class ExampleEncoder:
  """Encodes batches of fixed-length features as `tf.train.Example` bytes.

  Features whose every value fits one varint byte (masks, segment ids,
  boundaries, labels; `small_features`) and float features have a fixed
  encoded size; they are laid out for all rows at once as one uint8 matrix.
  Only the other int64 features need per-row work.

  Args:
    features: sequence of (name, dtype), dtype "int64" or "float32".
    small_features: names of int64 features whose values are all in [0, 127].
  """

  def __init__(self, features: Sequence[Tuple[str, str]],
               small_features: Sequence[str] = ()):
    self._dtypes = dict(features)
    self._fixed = [name for name, dtype in features
                   if dtype == "float32" or name in small_features]
    self._variable = [name for name, _ in features if name not in self._fixed]
    self._prefixes: Dict[str, List[bytes]] = {}

  def _prefix(self, name: str, payload_len: int) -> bytes:
    """The map entry's bytes for `name`, up to its packed payload."""
    name_bytes = name.encode("utf-8")
    # Int64List / FloatList: field 1, packed.
    values_len = 1 + len(_varint(payload_len)) + payload_len
    list_tag = b"\x1a" if self._dtypes[name] == "int64" else b"\x12"
    feature_len = 1 + len(_varint(values_len)) + values_len
    head = (b"\x0a" + _varint(len(name_bytes)) + name_bytes + b"\x12" +
            _varint(feature_len) + list_tag + _varint(values_len) + b"\x0a" +
            _varint(payload_len))
    return b"\x0a" + _varint(len(head) + payload_len) + head

  def _prefix_table(self, name: str, max_len: int) -> List[bytes]:
    table = self._prefixes.get(name, [])
    if len(table) <= max_len:
      table = [self._prefix(name, p) for p in range(max_len + 1)]
      self._prefixes[name] = table
    return table

  def _fixed_block(self, arrays: Dict[str, np.ndarray], n: int) -> np.ndarray:
    """uint8 [n, width]: the fixed-size features' entries, row by row."""
    pieces = []
    for name in self._fixed:
      values = np.asarray(arrays[name])
      if self._dtypes[name] == "float32":
        payload = np.ascontiguousarray(values, dtype="<f4").view(np.uint8)
      else:
        if values.size and (values.min() < 0 or values.max() > 127):
          raise ValueError(f"{name} has values outside [0, 127]")
        payload = values.astype(np.uint8)
      payload = payload.reshape(n, -1)
      prefix = np.frombuffer(self._prefix(name, payload.shape[1]), np.uint8)
      pieces.append(np.broadcast_to(prefix, (n, prefix.size)))
      pieces.append(payload)
    return np.concatenate(pieces, axis=1)

  def encode(self, arrays: Dict[str, np.ndarray]) -> List[bytes]:
    """Serialised Examples, one per row.

    Args:
      arrays: {name: array [n, length]}; int64 features hold non-negative
        ints below 2**28, float32 features hold floats.

    Returns:
      n byte strings, each a serialised `tf.train.Example`.
    """
    n = len(arrays[self._fixed[0] if self._fixed else self._variable[0]])
    if n == 0:
      return []
    fixed = self._fixed_block(arrays, n)
    fixed_width = fixed.shape[1]
    fixed_bytes = fixed.tobytes()
    columns = []
    for name in self._variable:
      stream, offsets = varint_rows(arrays[name])
      lengths = np.diff(offsets)
      table = self._prefix_table(name, int(lengths.max()))
      columns.append((stream, offsets.tolist(), table))
    examples = []
    for i in range(n):
      parts = []
      for stream, offsets, table in columns:
        start, end = offsets[i], offsets[i + 1]
        parts.append(table[end - start])
        parts.append(stream[start:end])
      parts.append(fixed_bytes[i * fixed_width:(i + 1) * fixed_width])
      body = b"".join(parts)
      examples.append(b"\x0a" + _varint(len(body)) + body)
    return examples
