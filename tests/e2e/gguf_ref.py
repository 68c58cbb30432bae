"""gguf_ref.py -- a GGUF v2/v3 writer and numpy dequantization of ggml's
block formats, written from ggml's docs/gguf.md and the block layouts, for
checking tokvec's GGUF reader bit for bit. Independent of tokvec's C code.

Block layouts (little endian; d, dmin, m are float16):
  Q8_0  d, qs[32] int8                      y = q * d
  Q4_0  d, qs[16]: value i<16 low nibble of qs[i], value 16+i high nibble
                                            y = (q - 8) * d
  Q4_1  d, m, qs[16]                        y = q * d + m
  Q5_0  d, qh u32 (bit i: 5th bit of value i), qs[16]
                                            y = (q - 16) * d
  Q5_1  d, m, qh, qs[16]                    y = q * d + m
  Q4_K  d, dmin, scales[12], qs[128]: 8 sub-blocks of 32 with 6-bit scale
        sc and min m; sub-block 2k = low nibbles of qs[32k:32k+32], 2k+1 =
        their high nibbles                  y = (d*sc) * q - (dmin*m)
  Q5_K  d, dmin, scales[12], qh[32], qs[128]: as Q4_K, 5th bit of value l
        of sub-block s is bit s of qh[l]
  Q6_K  ql[128], qh[64], scales[16] int8, d: per half h (128 values), value
        32*g + l (g = 0..3) has low 4 bits from ql[64h + l + 32*(g&1)]
        (nibble g>>1), high 2 bits (qh[32h + l] >> 2g) & 3, scale
        scales[8h + 2g + l//16]             y = (d*sc) * (q - 32)
Every operation in float32, one rounding each, in the order written.
"""
import struct

import numpy as np

F32 = np.float32
TYPES = {  # name: (ggml id, values per block, bytes per block)
    "F32": (0, 1, 4), "F16": (1, 1, 2), "BF16": (30, 1, 2),
    "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q2_K": (10, 256, 84),
}


def _s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def _value(t, v):
    if t == 8:
        return _s(v)
    if t == 9:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(
            _value(et, x) for x in items)
    fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           7: "<B", 10: "<Q", 11: "<q", 12: "<d"}[t]
    return struct.pack(fmt, v)


def gguf_bytes(tensors, kv=(), version=3, alignment=32):
    """tensors: (name, type name, ne (row length first), raw bytes); kv:
    (key, value type, value). Data aligned as the spec says."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kv))
    for key, t, v in kv:
        out += _s(key) + struct.pack("<I", t) + _value(t, v)
    offs, off = [], 0
    for _, _, _, raw in tensors:
        offs.append(off)
        off += -(-len(raw) // alignment) * alignment
    for (name, tn, ne, _), o in zip(tensors, offs):
        out += _s(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", TYPES[tn][0], o)
    out += b"\0" * (-len(out) % alignment)
    for (_, _, _, raw), o in zip(tensors, offs):
        out += raw + b"\0" * (-len(raw) % alignment)
    return out


def random_blocks(rng, tname, nblocks):
    """Random blocks whose float16 scales are finite (random bytes else)."""
    _, _, nb = TYPES[tname]
    raw = rng.integers(0, 256, size=(nblocks, nb), dtype=np.uint8)
    scales = {"Q8_0": [0], "Q4_0": [0], "Q5_0": [0], "Q4_1": [0, 2],
              "Q5_1": [0, 2], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}
    for at in scales[tname]:
        h = rng.normal(0, 0.02, nblocks).astype(np.float16)
        h[: max(1, nblocks // 8)] = np.float16(6e-6)  # some subnormal
        raw[:, at:at + 2] = h.view(np.uint8).reshape(nblocks, 2)
    return raw


def _f16(b, at):
    return b[:, at:at + 2].copy().view(np.float16).astype(F32)  # (n, 1)


def _nibbles(qs):
    return np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.int32)


def _bits(qh32, n):
    """(nblocks, n): bit i of the little-endian u32 qh."""
    q = qh32.copy().view("<u4").astype(np.int64)
    return ((q >> np.arange(n)) & 1).astype(np.int32)


def _k_scales(s):
    sc = np.zeros((s.shape[0], 8), np.int32)
    mn = np.zeros((s.shape[0], 8), np.int32)
    s = s.astype(np.int32)
    for j in range(8):
        if j < 4:
            sc[:, j], mn[:, j] = s[:, j] & 63, s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
            mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


def _k_quant(b, q, sc, mn):
    """q: (n, 8, 32) quants of 8 sub-blocks; (d*sc)*q - (dmin*m)."""
    d, dmin = _f16(b, 0), _f16(b, 2)
    d1 = (d * sc.astype(F32))[:, :, None]
    m1 = (dmin * mn.astype(F32))[:, :, None]
    return (d1 * q.astype(F32) - m1).reshape(b.shape[0], 256)


def dequantize(tname, raw):
    """raw: (nblocks, bytes) uint8 -> (nblocks * B,) float32."""
    b = raw
    n = b.shape[0]
    if tname == "Q8_0":
        return (b[:, 2:34].view(np.int8).astype(F32) * _f16(b, 0)).ravel()
    if tname == "Q4_0":
        return ((_nibbles(b[:, 2:18]) - 8).astype(F32) * _f16(b, 0)).ravel()
    if tname == "Q4_1":
        return (_nibbles(b[:, 4:20]).astype(F32) * _f16(b, 0)
                + _f16(b, 2)).ravel()
    if tname == "Q5_0":
        q = _nibbles(b[:, 6:22]) | (_bits(b[:, 2:6], 32) << 4)
        return ((q - 16).astype(F32) * _f16(b, 0)).ravel()
    if tname == "Q5_1":
        q = _nibbles(b[:, 8:24]) | (_bits(b[:, 4:8], 32) << 4)
        return (q.astype(F32) * _f16(b, 0) + _f16(b, 2)).ravel()
    if tname in ("Q4_K", "Q5_K"):
        sc, mn = _k_scales(b[:, 4:16])
        qs = b[:, 48:176] if tname == "Q5_K" else b[:, 16:144]
        q = np.zeros((n, 8, 32), np.int32)
        for k in range(4):
            chunk = qs[:, 32 * k:32 * k + 32].astype(np.int32)
            q[:, 2 * k], q[:, 2 * k + 1] = chunk & 0xF, chunk >> 4
        if tname == "Q5_K":
            qh = b[:, 16:48].astype(np.int32)
            for s in range(8):
                q[:, s] += ((qh >> s) & 1) * 16
        return _k_quant(b, q, sc, mn).ravel()
    if tname == "Q6_K":
        ql, qh = b[:, 0:128].astype(np.int32), b[:, 128:192].astype(np.int32)
        scales = b[:, 192:208].view(np.int8).astype(F32)
        d = _f16(b, 208)
        y = np.zeros((n, 256), F32)
        for h in range(2):
            for g in range(4):
                low = ql[:, 64 * h + 32 * (g & 1):64 * h + 32 * (g & 1) + 32]
                low = low & 0xF if g < 2 else low >> 4
                high = (qh[:, 32 * h:32 * h + 32] >> (2 * g)) & 3
                q = ((low | (high << 4)) - 32).astype(F32)
                for l in range(32):
                    sc = scales[:, 8 * h + 2 * g + l // 16][:, None]
                    y[:, 128 * h + 32 * g + l] = ((d * sc) * q[:, l:l + 1])[:, 0]
        return y.ravel()
    raise ValueError(tname)


def table_values(tname, raw_rows):
    """Float32 rows (rows, dim) of a table stored as tname."""
    if tname == "F32":
        return raw_rows.view("<f4")
    if tname == "F16":
        return raw_rows.view("<f2").astype(F32)
    if tname == "BF16":
        u = raw_rows.view("<u2").astype(np.uint32) << 16
        return u.view(F32)
    _, B, S = TYPES[tname]
    rows = raw_rows.shape[0]
    blocks = raw_rows.reshape(-1, S)
    return dequantize(tname, blocks).reshape(rows, -1)
