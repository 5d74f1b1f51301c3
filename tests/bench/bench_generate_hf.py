#!/usr/bin/env python3
"""Greedy GPT-2 generation: tandem's batched KV-cache generate against
transformers' GPT2LMHeadModel.generate, on the same weights and prompts.

    bench_generate_hf.py BENCH_GENERATE_PEER [--presets tiny,gpt2] [--batches 1,8]
        [--prompt 64] [--new 64] [--threads 2] [--rounds 3] [--json OUT] [--results FILE]

For each preset a GPT2LMHeadModel with fresh random weights (seed 0) is saved
with save_pretrained, and both sides load that directory: tandem through
`model.init_from = "hf:DIR"`'s loader (bench_generate_peer), transformers with
from_pretrained. Prompts are random token ids (no <|endoftext|>), all of one
length, so neither side pads. Both continue them greedily by --new tokens
with the KV cache on, <|endoftext|> ending a row, with --threads intra-op
threads, fp32 on the CPU. The sides take turns, ROUNDS runs each, each run
after a warm-up, and each side keeps its best; tokens/s counts the new
tokens of every row. The tokens must be the same: the table gives how many
agree, row by row up to the first difference (a near tie can flip under
float rounding; on random weights they are rare).
The memory floor: a decoding step reads every weight once, so at this
machine's read bandwidth (torch.sum over 512 MB, --threads threads) it takes
at least weights / bandwidth, for batch tokens. Where the weights are larger
than the caches (GPT-2 124M: 494 MB), no side can pass that rate; it leaves
out the prompt's forward pass, which the measured rates include.
--results appends the figures to env/bench.sh's table (results.py).
Exit 77 when transformers is not installed (env/setup.sh --tests).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import results

try:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs transformers in the venv)")
    sys.exit(77)

EOT = 50256
# n_layer, n_head, n_embd, n_positions, as GPTConfig::preset has them.
PRESETS = {"tiny": (4, 4, 128, 256), "gpt2": (12, 12, 768, 1024)}


def theirs(model, prompts, new):
    """transformers' generate: seconds of one run after a warm-up, and each row's new tokens up to eot."""
    ids = torch.tensor(prompts)
    mask = torch.ones_like(ids)
    kwargs = dict(attention_mask=mask, do_sample=False, eos_token_id=EOT, pad_token_id=EOT)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=4, **kwargs)
        start = time.perf_counter()
        out = model.generate(ids, max_new_tokens=new, **kwargs)
        seconds = time.perf_counter() - start
    rows = []
    for row in out[:, ids.shape[1]:].tolist():
        rows.append(row[: row.index(EOT)] if EOT in row else row)
    return seconds, rows


def ours(peer, hf_dir, prompts, new, threads, work):
    """tandem's generate: seconds of one run after a warm-up, and each row's new tokens."""
    prompts_file, out_file = os.path.join(work, "prompts.json"), os.path.join(work, "ours.json")
    with open(prompts_file, "w") as f:
        json.dump(prompts, f)
    args = [peer, "--hf", hf_dir, "--prompts", prompts_file, "--out", out_file, "--new", str(new),
            "--threads", str(threads), "--repeats", "1"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({run.returncode}): {run.stderr[-2000:]}")
    with open(out_file) as f:
        result = json.load(f)
    return result["seconds"], result["tokens"]


def read_bandwidth():
    """Bytes a second this machine reads from memory on the current threads:
    the best of five torch.sum over 512 MB, far more than any cache holds."""
    data = torch.ones(128 * 2**20)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - start)
    return data.numel() * data.element_size() / best


def agreeing(a, b):
    n = 0
    for x, y in zip(a, b):
        i = 0
        while i < min(len(x), len(y)) and x[i] == y[i]:
            i += 1
        n += i
    return n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("peer", help="build/tests/bench/bench_generate_peer")
    parser.add_argument("--presets", default="tiny,gpt2")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--results", help="append the figures to env/bench.sh's table")
    args = parser.parse_args()
    for preset in args.presets.split(","):
        if preset not in PRESETS:
            parser.error(f"--presets: unknown preset '{preset}' (known: {', '.join(PRESETS)})")
    batches = [int(b) for b in args.batches.split(",")]
    if min(batches) < 1 or args.prompt < 1 or args.new < 1 or args.threads < 1 or args.rounds < 1:
        parser.error("--batches, --prompt, --new, --threads and --rounds must be positive")

    torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()
    print(f"greedy generation, fp32 on the CPU, {args.threads} threads each side, torch {torch.__version__}, "
          f"prompt {args.prompt} + {args.new} new tokens, best of {args.rounds}")
    bandwidth = read_bandwidth()
    print(f"memory read at {bandwidth / 1e9:.1f} GB/s ({args.threads} threads, torch.sum over 512 MB); the floor "
          "is the rate at which decoding steps could read every weight once at that speed")
    print("| model | batch | tandem tokens/s | transformers tokens/s | tandem / transformers | same tokens "
          "| memory floor tokens/s |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_generate_hf.") as work:
        for preset in args.presets.split(","):
            n_layer, n_head, n_embd, n_positions = PRESETS[preset]
            if args.prompt + args.new > n_positions:
                sys.exit(f"--prompt + --new exceed {preset}'s {n_positions} positions")
            torch.manual_seed(0)
            config = GPT2Config(vocab_size=50257, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
                                n_head=n_head)
            hf_dir = os.path.join(work, preset)
            GPT2LMHeadModel(config).save_pretrained(hf_dir)
            model = GPT2LMHeadModel.from_pretrained(hf_dir).eval()
            # Every weight is read once a decoding step, whatever the batch
            # (the tied embedding once: parameters() lists it once), but of
            # the position table a row.
            weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
            wpe = model.transformer.wpe.weight
            weight_bytes -= (wpe.shape[0] - 1) * wpe.shape[1] * wpe.element_size()
            for batch in batches:
                prompts = torch.randint(EOT, (batch, args.prompt), generator=torch.Generator().manual_seed(batch))
                prompts = prompts.tolist()
                # Rounds alternate between the sides: this machine's speed drifts
                # by 10-40% over minutes, and each side keeps its best round.
                our_s = their_s = float("inf")
                for _ in range(args.rounds):
                    seconds, our_rows = ours(args.peer, hf_dir, prompts, args.new, args.threads, work)
                    our_s = min(our_s, seconds)
                    seconds, their_rows = theirs(model, prompts, args.new)
                    their_s = min(their_s, seconds)
                our_n, their_n = sum(map(len, our_rows)), sum(map(len, their_rows))
                row = {"model": preset, "batch": batch, "tandem_tokens_per_s": our_n / our_s,
                       "transformers_tokens_per_s": their_n / their_s,
                       "same_tokens": agreeing(our_rows, their_rows), "tokens": their_n,
                       "memory_floor_tokens_per_s": batch * bandwidth / weight_bytes}
                row["ratio"] = row["tandem_tokens_per_s"] / row["transformers_tokens_per_s"]
                rows.append(row)
                print(f"| {preset} | {batch} | {row['tandem_tokens_per_s']:.1f} | "
                      f"{row['transformers_tokens_per_s']:.1f} | {row['ratio']:.2f}x | "
                      f"{row['same_tokens']}/{their_n} | {row['memory_floor_tokens_per_s']:.0f} |", flush=True)
                results.add(args.results, "generation",
                            f"GPT-2 {preset}, batch {batch}, greedy, {args.new} new tokens "
                            f"(same tokens: {row['same_tokens']}/{their_n}; memory floor "
                            f"{row['memory_floor_tokens_per_s']:.0f} tokens/s)",
                            f"{row['tandem_tokens_per_s']:.0f} tokens/s",
                            f"transformers generate: {row['transformers_tokens_per_s']:.0f} tokens/s", row["ratio"], 2)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
