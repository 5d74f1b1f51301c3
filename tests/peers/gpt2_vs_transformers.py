"""apps/summarize's GPT-2 against Hugging Face transformers (PyPI), on CPU, fp32.

A randomly initialised GPT2LMHeadModel (small, GPT-2's vocabulary) is saved
with save_pretrained; then
  1. summarize_tests' TransformersPeer tests import it (model.init_from =
     "hf:DIR"'s loader) and compare logits with transformers' (within 1e-4),
     and export it back (what `summarize export` writes);
  2. the export loads with GPT2LMHeadModel.from_pretrained and gives tandem's
     logits (within 1e-4);
  3. `summarize generate --hf DIR` continues a prompt greedily with the same
     tokens as transformers' generate.
Usage: gpt2_vs_transformers.py SUMMARIZE SUMMARIZE_TESTS WORK_DIR  (exit 77: no transformers)
"""
import os
import subprocess
import sys

try:
    import gpt2_tiktoken
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import GPT2LMHeadModel
    from random_gpt2 import IDS, saved_random_gpt2
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs transformers in the venv)")
    sys.exit(77)

summarize, summarize_tests, work = sys.argv[1:4]
model = saved_random_gpt2(work, seed=3)
ids = IDS
with torch.no_grad():
    logits = model(ids).logits
save_file({"input_ids": ids, "logits": logits.contiguous()}, os.path.join(work, "reference.safetensors"))

failures = 0
run = subprocess.run([summarize_tests, "--gtest_filter=TransformersPeer.*"],
                     env={**os.environ, "TANDEM_PEER_GPT2_DIR": work}, capture_output=True, text=True)
print(run.stdout[-2000:])
if run.returncode != 0 or "[  PASSED  ] 2 tests" not in run.stdout:
    print("summarize_tests TransformersPeer.* failed")
    failures += 1
else:
    exported = GPT2LMHeadModel.from_pretrained(os.path.join(work, "exported")).eval()
    with torch.no_grad():
        theirs = exported(ids).logits
    ours = load_file(os.path.join(work, "tandem_logits.safetensors"))["logits"]
    diff = (theirs - ours).abs().max().item()
    print(f"exported model in transformers: largest logit difference {diff:.2e}")
    if diff > 1e-4:
        failures += 1

tokenizer_dir = gpt2_tiktoken.default_tokenizer_dir()
enc = gpt2_tiktoken.encoding(tokenizer_dir)
prompt = "Summarize: the meeting moved to Tuesday because the room was booked."
prompt_ids = enc.encode_ordinary(prompt)
with torch.no_grad():
    out = model.generate(torch.tensor([prompt_ids]), max_new_tokens=24, do_sample=False,
                         eos_token_id=50256, pad_token_id=50256)
new = out[0, len(prompt_ids):].tolist()
if 50256 in new:
    new = new[:new.index(50256)]
want = enc.decode(new)
gen = subprocess.run([summarize, "generate", "--hf", os.path.join(work, "hf"), "--prompt", prompt,
                      "--max-new-tokens", "24", "--set", f"tokenizer.dir={tokenizer_dir}"],
                     capture_output=True, text=True)
got = gen.stdout.rstrip("\n").split("\n")[-1] if gen.stdout.strip() else ""
print(f"greedy continuation: transformers {want!r}\n                     tandem       {got!r}")
if gen.returncode != 0 or got not in (want, prompt + want):
    print(gen.stderr)
    failures += 1

if failures:
    print(f"{failures} failures")
    sys.exit(1)
print("GPT-2 agrees with transformers")
