"""GPT-2 ids from `summarize tokenize` against tiktoken's, on the same ranks.

tiktoken is built from the gpt2.tiktoken file tandem reads, with GPT-2's
pattern, so a difference is the tokenizer's, not the vocabulary's. The corpus
mixes Unicode (accents, CJK, emoji with joiners), whitespace runs, contractions,
numbers and bytes that are not UTF-8, one text per line (the command's unit).
Usage: tokenizer_vs_tiktoken.py SUMMARIZE TOKENIZER_DIR WORK_DIR
(TOKENIZER_DIR "-": where the app looks by default, as env/tokenizer.sh puts it)
Exit 77 (ctest: skipped) when tiktoken is not importable.
"""
import json
import os
import random
import subprocess
import sys

try:
    import gpt2_tiktoken
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs tiktoken in the venv)")
    sys.exit(77)

summarize, tokenizer_dir, work = sys.argv[1:4]
if tokenizer_dir == "-":
    tokenizer_dir = gpt2_tiktoken.default_tokenizer_dir()
os.makedirs(work, exist_ok=True)

enc = gpt2_tiktoken.encoding(tokenizer_dir)

fixed = [
    "Hello world", "I'm", "don't", "they'll", "She's here, we've gone, you're right, I'd say",
    "IT'S ALL CAPS'LL", "a  b \t  c", "\tindented  trailing   ", "   ",
    "12345 67890 3.14159 1,000,000 0x1F 2024-11-24 ½ ² ٣٤٥",
    "Hello, world! (test) -- \"quoted\" ... ?!", "naïve café résumé Ünïcödé",
    "日本語のテキスト 中文 한국어", "🤖 👍🏽 👨‍👩‍👧 🏳️‍🌈", "Ελληνικά русский עברית العربية",
    "\u00a0non\u2003breaking\u3000spaces\u200b", "e\u0301 combining", "x" * 3000,
    "'s's's 'S 'll've're'd'm't", "a" + " " * 40 + "b", "<|endoftext|> as text",
]
rng = random.Random(12)
alphabet = list("abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 .,;:!?'\"()-\t") + \
    ["é", "ß", "中", "日", "🙂", "\u00a0", "’", "—", "ø", "\u2028"]
generated = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) for _ in range(400)]
texts = [t.encode() for t in fixed + generated]
# Bytes that are not UTF-8: lone continuation bytes, cut sequences, 0xff.
invalid = [b"abc\xff def", b"\x80\x81 lone", b"cut \xe6\x97", b"\xc3", b"mix \xf0\x9f\x98 end",
           b"\xfe\xfe\xfe x", b"ok \xed\xa0\x80 surrogate"]
for line in texts + invalid:
    assert b"\n" not in line and b"\r" not in line

text_file = os.path.join(work, "corpus.txt")
with open(text_file, "wb") as f:
    f.write(b"\n".join(texts + invalid) + b"\n")
run = subprocess.run([summarize, "tokenize", "--text-file", text_file,
                      "--set", f"tokenizer.dir={tokenizer_dir}"],
                     capture_output=True, check=True)
ours = [json.loads(line) for line in run.stdout.decode().splitlines()]
assert len(ours) == len(texts) + len(invalid), (len(ours), run.stderr.decode())

failures = 0
for text, ids in zip(texts, ours):
    want = enc.encode_ordinary(text.decode())
    if ids != want:
        failures += 1
        print(f"DIFFERENT ids for {text[:60]!r}:\n  tandem   {ids[:20]}\n  tiktoken {want[:20]}")
# Not UTF-8: tiktoken has no text for these, so its byte-level decode of our ids
# must give the bytes back, and every id must be a GPT-2 token.
for raw, ids in zip(invalid, ours[len(texts):]):
    if enc.decode_bytes(ids) != raw:
        failures += 1
        print(f"{raw!r} does not round-trip: {ids}")

print(f"{len(texts)} texts: ids identical to tiktoken on {len(texts) - failures if failures <= len(texts) else 0}; "
      f"{len(invalid)} non-UTF-8 lines round-trip through tiktoken's decode")
if failures:
    print(f"{failures} failures")
    sys.exit(1)
print("tokenizer agrees with tiktoken")
