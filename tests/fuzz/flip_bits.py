#!/usr/bin/env python3
"""flip_bits.py FILE OUT_DIR [COUNT] [SEED]: writes COUNT (default 400) copies
of FILE into OUT_DIR, each with one random bit flipped: storage damage, as
opposed to the many-byte mutations libFuzzer makes. Replay them through a
target of the ordinary build, for example
    tests/fuzz/flip_bits.py build/fuzz-seeds/h5/checkpoint.h5 /tmp/flips
    build/tests/fuzz_h5 /tmp/flips
which ends "N inputs replayed, none crashed" when every copy gave a result
or a usage error."""
import os
import random
import sys

path, out = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 400
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
original = open(path, "rb").read()
os.makedirs(out, exist_ok=True)
for i in range(count):
    damaged = bytearray(original)
    at = rng.randrange(len(damaged))
    damaged[at] ^= 1 << rng.randrange(8)
    with open(os.path.join(out, f"flip{i:04d}_byte{at}"), "wb") as f:
        f.write(damaged)
