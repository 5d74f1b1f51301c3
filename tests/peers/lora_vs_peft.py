"""summarize's LoRA against Hugging Face transformers and PEFT (PyPI), on CPU, fp32.

A randomly initialised GPT2LMHeadModel (small, GPT-2's vocabulary) is saved
with save_pretrained; summarize_tests' LoraPeer test puts random adapters on
all four of its projections and writes what `summarize export` writes for a
LoRA model (the merged model in lora/, PEFT's adapter in lora/adapter) with
tandem's logits of the adapted and the merged model. Then, each within 1e-4:
  1. GPT2LMHeadModel.from_pretrained(lora/) gives tandem's merged logits;
  2. PeftModel.from_pretrained(base, lora/adapter) gives tandem's adapted logits;
  3. PEFT's own merge_and_unload of it gives them too.
Usage: lora_vs_peft.py SUMMARIZE_TESTS WORK_DIR  (exit 77: no transformers or peft)
"""
import os
import subprocess
import sys

try:
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file, save_file
    from transformers import GPT2LMHeadModel
    from random_gpt2 import IDS, saved_random_gpt2
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs transformers and peft in the venv)")
    sys.exit(77)

summarize_tests, work = sys.argv[1:3]
base = saved_random_gpt2(work, seed=4)
ids = IDS
save_file({"input_ids": ids}, os.path.join(work, "reference.safetensors"))

run = subprocess.run([summarize_tests, "--gtest_filter=LoraPeer.*"],
                     env={**os.environ, "TANDEM_PEER_LORA_DIR": work}, capture_output=True, text=True)
print(run.stdout[-2000:])
if run.returncode != 0 or "[  PASSED  ] 1 test" not in run.stdout:
    print("summarize_tests LoraPeer.* failed")
    sys.exit(1)
ours = load_file(os.path.join(work, "tandem_lora_logits.safetensors"))

failures = 0
def check(what, theirs, want):
    global failures
    diff = (theirs - want).abs().max().item()
    print(f"{what}: largest logit difference {diff:.2e}")
    if diff > 1e-4:
        failures += 1

with torch.no_grad():
    merged = GPT2LMHeadModel.from_pretrained(os.path.join(work, "lora")).eval()
    check("merged export in transformers", merged(ids).logits, ours["merged"])
    # Adapters PEFT failed to load would leave the base's logits: they must
    # differ from the adapted ones for the comparisons to mean anything.
    moved = (base(ids).logits - ours["adapted"]).abs().max().item()
    print(f"the adapters move the logits by up to {moved:.2e}")
    if moved < 1e-2:
        failures += 1
    base_again = GPT2LMHeadModel.from_pretrained(os.path.join(work, "hf")).eval()
    peft = PeftModel.from_pretrained(base_again, os.path.join(work, "lora", "adapter")).eval()
    check("PEFT adapter on the base", peft(input_ids=ids).logits, ours["adapted"])
    check("PEFT's merge_and_unload", peft.merge_and_unload()(ids).logits, ours["adapted"])
sys.exit(1 if failures else 0)
