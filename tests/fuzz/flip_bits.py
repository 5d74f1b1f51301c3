#!/usr/bin/env python3
"""flip_bits.py FILE OUT_DIR [--count N] [--seed S] [--judge COMPARE_RUNS]:
writes N (default 400) copies of FILE into OUT_DIR, each with one random bit
flipped: storage damage, as opposed to the many-byte mutations libFuzzer
makes. Replay them through a target of the ordinary build, for example
    tests/fuzz/flip_bits.py build/fuzz-seeds/h5/checkpoint.h5 /tmp/flips
    build/tests/fuzz_h5 /tmp/flips
which ends "N inputs replayed, none crashed" when every copy gave a result
or a usage error. With --judge (build/tests/compare_runs), each copy of a
checkpoint is also loaded as a resume would load it and compared with FILE,
and the copies are counted: refused (the damage was noticed), equal (the bit
was one no reader uses) and unnoticed (it loads, and differs)."""
import argparse
import collections
import os
import random
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("file")
parser.add_argument("out_dir")
parser.add_argument("--count", type=int, default=400)
parser.add_argument("--seed", type=int, default=7)
parser.add_argument("--judge", help="compare_runs, to count refused, equal and unnoticed copies")
args = parser.parse_args()

rng = random.Random(args.seed)
original = open(args.file, "rb").read()
os.makedirs(args.out_dir, exist_ok=True)
copies = []
for i in range(args.count):
    damaged = bytearray(original)
    at = rng.randrange(len(damaged))
    damaged[at] ^= 1 << rng.randrange(8)
    copies.append(os.path.join(args.out_dir, f"flip{i:04d}_byte{at}"))
    with open(copies[-1], "wb") as f:
        f.write(damaged)

if args.judge:
    verdicts = {0: "equal", 1: "unnoticed", 3: "refused"}
    counts = collections.Counter()
    unnoticed = []
    for copy in copies:
        run = subprocess.run([args.judge, "checkpoints", args.file, copy, "0"], capture_output=True, text=True)
        verdict = verdicts.get(run.returncode, f"exit {run.returncode}")
        counts[verdict] += 1
        if verdict not in ("equal", "refused"):
            unnoticed.append(f"{os.path.basename(copy)}: {verdict}: {(run.stdout + run.stderr).strip()[:200]}")
    print(f"{len(copies)} single-bit flips of {args.file} ({len(original)} bytes):",
          ", ".join(f"{counts[v]} {v}" for v in ("refused", "equal", "unnoticed")) +
          "".join(f", {n} {v}" for v, n in counts.items() if v not in ("refused", "equal", "unnoticed")))
    for line in unnoticed:
        print("  " + line)
