#!/usr/bin/env python3
"""blockwise8_vs_numpy.py UNIT_TESTS WORK: tandem's 8-bit moments
(libcore/include/tandem/train/blockwise8.h) against a reference written here
from bitsandbytes' definitions: the dynamic map of
functional.create_dynamic_map (signed and unsigned, max_exponent_bits 7,
computed in fp32 as torch computes it), and quantize_blockwise as its
default backend does it (absmax of each block of 2048, the values times the
reciprocal, clamped to [-1, 1], argmin of the fp32 distance to the codes:
the first, lower, of equal ones). Blocks: random at several scales, all
zeros, one huge value among small ones, subnormals, exact ties between two
codes, values beyond the signed map's most negative code, and a short last
block. Codes, scales and maps must be identical; dequantised values within
half a gap of the codes times the block's absmax.

UNIT_TESTS' Blockwise8Peer case reads WORK/input.f32 and writes what tandem
makes of it. Exits 77 (skipped) without numpy or torch.
"""
import os
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

BLOCK = 2048
unit_tests, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)


def dynamic_map(signed):
    """Decades 1e-6 .. 1, each the midpoints of an fp32 linspace(0.1, 1) of
    2^i (+1 unsigned) intervals scaled by the decade, with their negatives
    when signed; then 0 and 1, ascending (bitsandbytes' definition)."""
    codes = []
    for i in range(7):
        items = 2 ** (i if signed else i + 1) + 1
        bounds = torch.linspace(0.1, 1, items)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        decade = 10 ** (-6 + i)
        codes += (decade * means).tolist()
        if signed:
            codes += (-decade * means).tolist()
    codes += [0.0, 1.0]
    assert len(codes) == 256
    return np.array(sorted(codes), dtype=np.float32)


def quantize(values, code):
    n = values.size
    blocks = (n + BLOCK - 1) // BLOCK
    absmax = np.zeros(blocks, dtype=np.float32)
    out = np.zeros(n, dtype=np.uint8)
    for b in range(blocks):
        part = values[b * BLOCK:(b + 1) * BLOCK]
        absmax[b] = np.abs(part).max()
        with np.errstate(over="ignore", invalid="ignore"):  # a subnormal absmax's reciprocal is inf
            inverse = np.float32(0) if absmax[b] == 0 else np.float32(1) / absmax[b]
            scaled = np.nan_to_num(np.clip(part * inverse, np.float32(-1), np.float32(1)), nan=0.0)
        out[b * BLOCK:(b + 1) * BLOCK] = np.argmin(np.abs(scaled[:, None] - code[None, :]), axis=1)
    return out, absmax


rng = np.random.default_rng(7)
signed_map, unsigned_map = dynamic_map(True), dynamic_map(False)
blocks = [rng.standard_normal(BLOCK) * scale for scale in (1e-8, 1e-3, 1.0, 1e4)]
blocks.append(np.zeros(BLOCK))
huge = rng.standard_normal(BLOCK) * 1e-4
huge[17] = 3e5
blocks.append(huge)
subnormal = rng.standard_normal(BLOCK) * 1e-40  # under fp32's smallest normal: the reciprocal overflows
subnormal[5] = 0.0
subnormal_at = sum(b.size for b in blocks) + 5
blocks.append(subnormal)
# Ties: the fp32 midpoint of two neighbouring codes, with 1.0 fixing absmax
# at 1, where the midpoint is exactly as far from both.
ties = []
for code in (signed_map, unsigned_map):
    for k in range(255):
        mid = np.float32((np.float64(code[k]) + np.float64(code[k + 1])) / 2)
        if mid - code[k] == code[k + 1] - mid:
            ties.append(mid)
tie_block = np.zeros(BLOCK)
tie_block[0] = 1.0
tie_block[1:1 + len(ties)] = ties
blocks.append(tie_block)
edge = rng.uniform(-1, 1, BLOCK)
edge[0], edge[1] = -1.0, 1.0  # -1 lies beyond the signed map's most negative code
blocks.append(edge)
blocks.append(rng.standard_normal(300))  # the short last block
values = np.concatenate(blocks).astype(np.float32)
values.tofile(work / "input.f32")

run = subprocess.run([unit_tests, "--gtest_filter=Blockwise8Peer.*"],
                     env={**os.environ, "TANDEM_PEER_BLOCKWISE8_DIR": str(work)}, capture_output=True, text=True)
if run.returncode != 0 or "[  PASSED  ] 1 test" not in run.stdout:
    print(run.stdout[-3000:], run.stderr[-3000:])
    print("FAIL: the Blockwise8Peer case did not run")
    sys.exit(1)

failures = []
print(f"{values.size} values in {len(blocks)} blocks, {len(ties)} exact ties between codes")
for name, code in (("signed", signed_map), ("unsigned", unsigned_map)):
    theirs = np.fromfile(work / f"map_{name}.f32", dtype=np.float32)
    if not np.array_equal(theirs, code):
        failures.append(f"the {name} map differs at {np.flatnonzero(theirs != code)[:5]}")
    # The unsigned map quantises the second moment, never negative.
    data = values if name == "signed" else np.abs(values)
    want_codes, want_absmax = quantize(data, code)
    codes = np.fromfile(work / f"codes_{name}.u8", dtype=np.uint8)
    absmax = np.fromfile(work / f"absmax_{name}.f32", dtype=np.float32)
    if not np.array_equal(absmax, want_absmax):
        failures.append(f"{name}: absmax differs in blocks {np.flatnonzero(absmax != want_absmax)[:5]}")
    differ = np.flatnonzero(codes != want_codes)
    if differ.size:
        k = differ[0]
        failures.append(f"{name}: {differ.size} codes differ, first at {k} (value {data[k]!r}): "
                        f"{codes[k]} against {want_codes[k]}")
    back = np.fromfile(work / f"dequantized_{name}.f32", dtype=np.float32)
    scale = np.repeat(want_absmax, BLOCK)[:data.size]
    if not np.array_equal(back, code[want_codes] * scale):
        failures.append(f"{name}: dequantised values are not map[code] * absmax")
    gap = np.max(np.diff(code))
    normal = scale >= np.finfo(np.float32).tiny
    error = np.abs(back - data)
    worst = np.max(error[normal] / scale[normal])
    print(f"{name}: largest error {worst:.5f} of its block's absmax (half the largest gap: {gap / 2:.5f})")
    # Beyond the signed map's most negative code, clamping adds its distance to -1.
    if worst > gap / 2 + (1 + code[0] if name == "signed" else 0) + 1e-7:
        failures.append(f"{name}: an error of {worst} of absmax, past half the largest gap")
    # A subnormal absmax: off by at most twice it, and its zero stays 0.
    if np.any(error[~normal] > 2 * scale[~normal]) or back[subnormal_at] != 0:
        failures.append(f"{name}: the subnormal block is off by more than twice its absmax, or lost its zero")
for f in failures:
    print("FAIL: " + f)
print("PASS" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
