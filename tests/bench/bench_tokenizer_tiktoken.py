"""tiktoken's side of bench_tokenizer: encodes each line of TEXT_FILE twice
(a first pass, then a second) on one thread and prints one JSON line.
tiktoken is built from the same gpt2.tiktoken ranks as tandem, with GPT-2's
pattern, so the ids must be identical.
  python bench_tokenizer_tiktoken.py TOKENIZER_DIR TEXT_FILE
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import gpt2_tiktoken  # noqa: E402  (after the path it lives on)

tokenizer_dir, text_file = sys.argv[1:3]
enc = gpt2_tiktoken.encoding(tokenizer_dir)
with open(text_file, "rb") as f:
    data = f.read()
lines = data.decode("utf-8").split("\n")  # tiktoken encodes text: the corpus must be UTF-8


def run():
    start = time.perf_counter()
    tokens = checksum = 0
    for line in lines:
        for i in enc.encode_ordinary(line):
            checksum = (checksum * 31 + i) & 0xFFFFFFFF  # the C++ side hashes the same way
            tokens += 1
    return time.perf_counter() - start, tokens, checksum


cold, tokens, checksum = run()
warm, _, _ = run()
print(json.dumps({"bytes": len(data), "cold_s": cold, "warm_s": warm, "tokens": tokens,
                  "checksum": checksum}))
