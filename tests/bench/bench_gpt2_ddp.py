#!/usr/bin/env python3
"""GPT-2 fine-tuning on 2 ranks: `mpirun -np 2 apps/summarize train` against
the seeds' Python recipe under torchrun + DDP and under Accelerate.

    bench_gpt2_ddp.py SUMMARIZE [--presets tiny,gpt2] [--data ../shared/data/scitldr]
        [--steps N] [--warmup N] [--rounds 2] [--json OUT]
        [--only tandem,torchrun,accelerate,torchrun+summary-head] [--results FILE]
        [--only tandem,tandem-grouped,tandem-packed --accum 4 --block 512]    # data.batching's modes
        [--packed-micro-batch N]

All three train the same model shape on the same token sequences (SciTLDR's
training set as tandem tokenizes and caches it; gpt2_ddp_peer.py reads that
cache), with the same micro batch per rank, global batch, optimizer settings
and one compute thread per rank (OMP_NUM_THREADS=1; 2 ranks on 2 cores).
Batches are drawn at random on each side from the same sequences, so their
padding differs step by step; tokens/s counts the real tokens of each step,
which makes the sides comparable. Warm-up steps are excluded. The sides
alternate, ROUNDS times, and each keeps its best round.

Figures: tokens/s, ms/step, seconds from launch to the end of the first
step, and peak RSS of rank 0. The one difference in the work done is the
recipe's: tandem runs GPT-2's head only where a summary token is predicted,
the seeds' recipe computes the full logits and masks the loss. So one more
side, torchrun+summary-head, runs the recipe with the head cut as tandem's:
the runtimes compared alone. With tandem-1rank in --only, tandem also trains
the same global batch on one rank (two micro-batches a step), and the scaling
efficiency, (2-rank tokens/s / 1-rank tokens/s) / 2, is printed.
The side tandem-grouped trains with data.batching = "grouped" (the side
tandem is "random"): the same steps with less padding; tandem's rows give
the pad fraction, the share of computed tokens that were padding. The side
tandem-packed trains with data.batching = "packed": the same global batch
of rows, packed into sequences of the block, --packed-micro-batch of them a
micro-batch (default: half the micro-batch's rows, at least 1).
--results appends the figures to env/bench.sh's table (results.py).
Exit 77 when torch, accelerate or h5py is missing (env/setup.sh --bench).
"""
import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time

import results
from ddp_launch import free_port, keep_best, peer_summary, run, tandem_summary, torchrun

try:
    import accelerate  # noqa: F401  (the peers run in their own processes)
    import h5py
    import torch
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --bench installs the peers in the venv)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "gpt2_ddp_peer.py")
SHAPES = {"tiny": (4, 4, 128, 256), "gpt2": (12, 12, 768, 1024)}  # layers, heads, width, block
# Micro batch per rank and steps, warm-up: a few minutes per side on 2 cores.
DEFAULTS = {"tiny": (16, 12, 3), "gpt2": (2, 4, 2)}
WORLD = 2


def run_tandem(a, side, preset, micro, steps, warmup, work, env):
    # tandem-1rank: the same global batch on one rank, in WORLD micro-batches
    # per step, for the scaling figure.
    ranks = 1 if side == "tandem-1rank" else WORLD
    batching = side.partition("-")[2] if side in BATCHING_SIDES else "random"
    # Packed, the micro-batch counts sequences and the global batch stays in rows.
    split = ["--set", f"train.micro_batch={micro}", "--set", f"train.grad_accum={a.accum * WORLD // ranks}"]
    if batching == "packed":
        split = ["--set", f"train.micro_batch={a.packed_micro_batch or max(1, micro // 2)}",
                 "--set", f"train.global_batch={micro * WORLD * a.accum}"]
    out = os.path.join(work, f"{side}-{preset}")
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.time()
    run(["mpirun", "-np", str(ranks), a.summarize, "train",
         "--set", f"model.preset={preset}", "--set", f"model.block_size={a.block or SHAPES[preset][3]}",
         "--set", f"data.train_csv={a.data}/train.csv",
         "--set", f"data.val_csv={work}/val.csv", "--set", f"data.cache_dir={work}/cache-{preset}",
         *split, "--set", f"train.max_steps={warmup + steps}", "--set", "train.warmup_steps=1",
         "--set", "train.lr=2e-3", "--set", "train.log_every=1", "--set", f"data.batching={batching}",
         "--set", f"train.out_dir={out}"],
        env, os.path.join(work, f"{side}-{preset}.log"))
    return tandem_summary(side, "tokens", out, warmup, t0, "tokens_per_s")


def token_cache(work, preset):
    """tandem's training set for PRESET: the largest of its token caches."""
    folder = os.path.join(work, f"cache-{preset}")
    files = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".h5")]
    return max(files, key=lambda f: h5py.File(f, "r")["prompt_len"].shape[0])


def run_peer(a, side, preset, micro, steps, warmup, work, env):
    launcher, _, variant = side.partition("+")
    layers, heads, width, block = SHAPES[preset]
    block = a.block or block
    args = ["--head", "summary" if variant == "summary-head" else "full", "--launcher", launcher, "--tokens", token_cache(work, preset), "--n-layer", str(layers),
            "--n-head", str(heads), "--n-embd", str(width), "--block", str(block), "--micro-batch", str(micro),
            "--steps", str(steps), "--warmup", str(warmup)]
    bindir = os.path.dirname(a.python)
    if launcher == "torchrun":
        cmd = torchrun(a.python, WORLD, PEER, args)
    else:
        hostfile = os.path.join(work, "hostfile")
        with open(hostfile, "w") as f:
            f.write(f"localhost slots={WORLD}\n")
        cmd = [os.path.join(bindir, "accelerate"), "launch", "--cpu", "--num_processes", str(WORLD),
               "--num_machines", "1", "--mpirun_hostfile", hostfile, "--main_process_port", str(free_port()),
               PEER] + args
    log = os.path.join(work, f"{side}-{preset}.log")
    peer_env = dict(env, BENCH_T0=repr(time.time()))
    run(cmd, peer_env, log)
    return peer_summary(side, "tokens", log)


# tandem with data.batching other than "random" (the side "tandem").
BATCHING_SIDES = ("tandem-grouped", "tandem-packed")
# The goals: tandem's tokens/s over the faster of torchrun + DDP and Accelerate.
GOALS = {"tiny": 1.15, "gpt2": 1.05}
NAMES = {"torchrun": "torchrun + DDP", "accelerate": "Accelerate",
         "torchrun+summary-head": "torchrun + DDP, head cut as tandem's", "tandem-1rank": "tandem on 1 rank",
         "tandem-grouped": "tandem, micro-batches grouped by length",
         "tandem-packed": "tandem, rows packed into sequences"}


def waited(ours):
    """The 2-rank run's wait for the all-reduce after backward, per step."""
    share = ours["sync_wait_ms"] / ours["ms_per_step"]
    return f"all-reduce wait after backward {ours['sync_wait_ms']:.0f} ms a step, {100 * share:.0f}% of it"


def table_rows(path, rows, presets):
    """env/bench.sh's rows: tokens/s against each peer, and 1 against 2 ranks."""
    for preset in presets:
        by = {r["side"]: r for r in rows if r["preset"] == preset}
        if "tandem" not in by:
            continue
        ours = by["tandem"]
        for side, r in by.items():
            if side == "tandem":
                continue
            figure = (f"GPT-2 {preset} training, {WORLD} ranks x 1 thread, global batch {ours['global_batch']}"
                      if side != "tandem-1rank" else
                      f"GPT-2 {preset} scaling, 1 to {WORLD} ranks at global batch {ours['global_batch']} "
                      f"(efficiency {ours['tokens_per_s'] / r['tokens_per_s'] / WORLD:.2f}; {waited(ours)})")
            goal = GOALS[preset] if side in ("torchrun", "accelerate") else None
            results.add(path, "GPT-2 DDP", figure, f"{ours['tokens_per_s']:.0f} tokens/s",
                        f"{NAMES[side]}: {r['tokens_per_s']:.0f} tokens/s", ours["tokens_per_s"] / r["tokens_per_s"],
                        goal)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("summarize")
    p.add_argument("--presets", default="tiny,gpt2")
    p.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "scitldr"))
    p.add_argument("--steps", type=int, default=0, help="timed steps (default: per preset)")
    p.add_argument("--warmup", type=int, default=-1)
    p.add_argument("--micro-batch", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--block", type=int, default=0, help="positions (default: the preset's)")
    p.add_argument("--accum", type=int, default=1,
                   help="micro-batches a rank accumulates a step (tandem's sides alone: the peers do not)")
    p.add_argument("--packed-micro-batch", type=int, default=0,
                   help="packed sequences a micro-batch on tandem-packed (default: half --micro-batch, at least 1)")
    p.add_argument("--only", default="tandem,torchrun,accelerate,torchrun+summary-head")
    p.add_argument("--python", default=sys.executable, help="the venv's Python: torchrun and accelerate beside it")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--results", help="append the figures to env/bench.sh's table")
    a = p.parse_args()
    a.summarize = os.path.abspath(a.summarize)
    a.data = os.path.abspath(a.data)
    if not os.path.isfile(os.path.join(a.data, "train.csv")):
        print(f"skipped: {a.data}/train.csv not found (../shared/data)")
        sys.exit(77)

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")
    sides = a.only.split(",")
    if a.accum > 1 and not all(side.startswith("tandem") for side in sides):
        sys.exit("--accum is for tandem's sides: the peers do not accumulate, so their global batch would differ")
    figures = []
    with tempfile.TemporaryDirectory(prefix="bench-gpt2-ddp.") as work:
        # Validation is not what is timed: a few rows keep the end-of-run evaluation short.
        with open(os.path.join(a.data, "validation.csv"), newline="") as f, \
                open(os.path.join(work, "val.csv"), "w", newline="") as out:
            rows = list(csv.reader(f))
            csv.writer(out).writerows(rows[: 1 + 2 * WORLD])
        for preset in a.presets.split(","):
            micro, steps, warmup = DEFAULTS[preset]
            micro = a.micro_batch or micro
            steps = a.steps or steps
            warmup = a.warmup if a.warmup >= 0 else warmup
            best = {}
            for round_ in range(a.rounds):
                for side in sides:
                    if side.startswith("tandem"):
                        r = run_tandem(a, side, preset, micro, steps, warmup, work, env)
                    else:
                        if not any(f.endswith(".h5") for f in os.listdir(os.path.join(work, f"cache-{preset}"))):
                            sys.exit("the peers read tandem's token cache: keep tandem in --only")
                        r = run_peer(a, side, preset, micro, steps, warmup, work, env)
                    print(f"# {preset} round {round_ + 1} {side}: {r['tokens_per_s']:.0f} tokens/s, "
                          f"{r['ms_per_step']:.0f} ms/step", flush=True)
                    keep_best(best, r, "tokens_per_s")
            for side in sides:
                figures.append(dict(best[side], preset=preset, micro_batch=micro, global_batch=micro * WORLD * a.accum,
                                    steps=steps, warmup=warmup))

    print(f"\nGPT-2 fine-tuning, {WORLD} ranks x 1 thread, torch {torch.__version__}, best of {a.rounds}:\n")
    print("| model | side | tokens/s | pad fraction | ms/step | first step (s) | peak RSS rank 0 (MB) | tandem / side |")
    print("|---|---|---|---|---|---|---|---|")
    for r in figures:
        ours = next(x for x in figures if x["preset"] == r["preset"] and x["side"] == "tandem") \
            if "tandem" in sides else None
        ratio = f"{ours['tokens_per_s'] / r['tokens_per_s']:.2f}x" if ours else "n/a"
        pad = f"{r['pad_fraction']:.3f}" if "pad_fraction" in r else "n/a"
        print(f"| {r['preset']} (micro {r['micro_batch']}, global {r['global_batch']}) | {r['side']} | "
              f"{r['tokens_per_s']:.0f} | {pad} | {r['ms_per_step']:.0f} | {r['first_step_s']:.1f} | "
              f"{r['peak_rss_mb']:.0f} | {ratio} |")
    for preset in a.presets.split(","):
        by = {r["side"]: r for r in figures if r["preset"] == preset}
        if "tandem" in by and "tandem-1rank" in by:
            print(f"\n{preset}: scaling efficiency from 1 to {WORLD} ranks "
                  f"{by['tandem']['tokens_per_s'] / by['tandem-1rank']['tokens_per_s'] / WORLD:.2f}; "
                  f"{waited(by['tandem'])}")
    table_rows(a.results, figures, a.presets.split(","))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
