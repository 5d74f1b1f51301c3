#!/usr/bin/env python3
"""DiT training on 2 ranks: `mpirun -np 2 apps/vavae train-dit` against the
same LightningDiT written in PyTorch under torchrun + DDP (dit_ddp_peer.py).

    bench_dit_ddp.py VAVAE [--presets tiny,B/1] [--steps N] [--warmup N] [--rounds 2] [--results FILE]

Both sides train the same network on the same latents: a latent file written
here in the layout `vavae extract` writes (random latents, one class per
"user"; train-dit's work per step does not depend on their values), with the
same micro batch per rank, recipe (rectified flow with logit-normal
timesteps, a tenth of the labels dropped, AdamW betas 0.9/0.95 at a constant
1e-4, clipping at 1, EMA 0.9999) and one compute thread per rank
(OMP_NUM_THREADS=1; 2 ranks on 2 cores). Shapes: tiny is apps/vavae's tiny
DiT on the tiny VAE's 4x8x8 latents (jobs/vavae-tiny.toml's width of 128);
B/1 is LightningDiT-B/1 on VA-VAE's 32x16x16 latents of 256-pixel images.
Warm-up steps are excluded; the sides alternate ROUNDS times and each keeps
its best round. Figures: samples/s, ms/step, seconds from launch to the end
of the first step, peak RSS of rank 0.
--results appends the figures to env/bench.sh's table (results.py).
Exit 77 when h5py is missing (env/setup.sh --bench).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import results
from ddp_launch import keep_best, peer_summary, run, tandem_summary, torchrun

try:
    import h5py
    import numpy as np
    import torch
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --bench installs the peers in the venv)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "dit_ddp_peer.py")
WORLD = 2
GOAL = 1.1  # the issue's: tandem's samples/s over the PyTorch DiT under DDP
# depth, hidden, heads, latent channels, latent size, micro batch, steps, warm-up
SHAPES = {"tiny": (2, 128, 4, 4, 8, 32, 20, 3), "B/1": (12, 768, 12, 32, 16, 2, 4, 1)}
CLASSES = 10
LATENTS = 512


def write_latents(folder, channels, size):
    """train.h5 and val.h5 as `vavae extract` writes them."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, count in (("train", LATENTS), ("val", 2 * WORLD)):
        latents = rng.standard_normal((count, channels, size, size), dtype=np.float32)
        with h5py.File(os.path.join(folder, f"{split}.h5"), "w") as f:
            f["latents"] = latents
            f["user_ids"] = (np.arange(count) % CLASSES + 1).astype(np.int64)
            f["mean"] = np.zeros(channels, np.float32)
            f["std"] = np.ones(channels, np.float32)
            for key, value in (("num_users", CLASSES), ("num_samples", count), ("image_size", size * 16)):
                f.attrs[key] = np.int64(value)
            for key in ("vae_path", "vae_hash", "vae_preset"):
                f.attrs[key] = np.bytes_("bench_dit_ddp")


def run_tandem(a, preset, shape, work, env):
    depth, hidden, heads, _, _, micro, steps, warmup = shape
    out = os.path.join(work, "run", "dit")
    shutil.rmtree(out, ignore_errors=True)
    total = warmup + steps
    t0 = time.time()
    run(["mpirun", "-np", str(WORLD), a.vavae, "train-dit", "--set", f"train.out_dir={work}/run",
         "--set", f"dit.preset={preset}", "--set", f"dit.depth={depth}",
         "--set", f"dit.hidden_size={hidden}", "--set", f"dit.num_heads={heads}",
         "--set", f"dit.micro_batch={micro}", "--set", f"dit.max_steps={total}", "--set", "dit.schedule=constant",
         "--set", "dit.warmup_steps=0", "--set", f"train.eval_every={total}", "--set", "train.ckpt_every=0",
         "--set", "train.log_every=1", "--set", "train.precision=fp32"],
        env, os.path.join(work, f"tandem-{preset.replace('/', '')}.log"))
    return tandem_summary("tandem", "samples", out, warmup, t0)


def run_peer(a, preset, shape, work, env):
    depth, hidden, heads, _, _, micro, steps, warmup = shape
    args = ["--latents", os.path.join(work, "run", "latent_features", "train.h5"), "--depth", str(depth),
            "--hidden", str(hidden), "--heads", str(heads), "--patch", "1", "--micro-batch", str(micro),
            "--steps", str(steps), "--warmup", str(warmup)]
    log = os.path.join(work, f"torchrun-{preset.replace('/', '')}.log")
    run(torchrun(a.python, WORLD, PEER, args), dict(env, BENCH_T0=repr(time.time())), log)
    return peer_summary("torchrun", "samples", log)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("vavae")
    p.add_argument("--presets", default="tiny,B/1")
    p.add_argument("--steps", type=int, default=0, help="timed steps (default: per preset)")
    p.add_argument("--warmup", type=int, default=-1)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--python", default=sys.executable, help="the venv's Python: torchrun beside it")
    p.add_argument("--results", help="append the figures to env/bench.sh's table")
    a = p.parse_args()
    a.vavae = os.path.abspath(a.vavae)
    presets = a.presets.split(",")
    for preset in presets:
        if preset not in SHAPES:
            p.error(f"--presets: unknown preset '{preset}' (known: {', '.join(SHAPES)})")
    if a.rounds < 1 or a.steps < 0:
        p.error("--rounds must be positive and --steps not negative")

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")
    figures = []
    with tempfile.TemporaryDirectory(prefix="bench-dit-ddp.") as work:
        for preset in presets:
            shape = list(SHAPES[preset])
            shape[6] = a.steps or shape[6]
            shape[7] = a.warmup if a.warmup >= 0 else shape[7]
            write_latents(os.path.join(work, "run", "latent_features"), shape[3], shape[4])
            best = {}
            for round_ in range(a.rounds):
                for runner in (run_tandem, run_peer):
                    r = runner(a, preset, shape, work, env)
                    print(f"# {preset} round {round_ + 1} {r['side']}: {r['samples_per_s']:.1f} samples/s, "
                          f"{r['ms_per_step']:.0f} ms/step", flush=True)
                    keep_best(best, r, "samples_per_s")
            figures.append((preset, shape, best["tandem"], best["torchrun"]))

    print(f"\nDiT training, {WORLD} ranks x 1 thread, torch {torch.__version__}, best of {a.rounds}:\n")
    print("| model | side | samples/s | ms/step | first step (s) | peak RSS rank 0 (MB) | tandem / side |")
    print("|---|---|---|---|---|---|---|")
    for preset, shape, ours, theirs in figures:
        label = f"{preset} ({shape[3]}x{shape[4]}x{shape[4]} latents, micro {shape[5]})"
        for r in (ours, theirs):
            print(f"| {label} | {r['side']} | {r['samples_per_s']:.1f} | {r['ms_per_step']:.0f} | "
                  f"{r['first_step_s']:.1f} | {r['peak_rss_mb']:.0f} | "
                  f"{ours['samples_per_s'] / r['samples_per_s']:.2f}x |")
        results.add(a.results, "DiT DDP",
                    f"DiT {preset} training, {WORLD} ranks x 1 thread, global batch {shape[5] * WORLD}",
                    f"{ours['samples_per_s']:.1f} samples/s",
                    f"PyTorch DiT + DDP: {theirs['samples_per_s']:.1f} samples/s",
                    ours["samples_per_s"] / theirs["samples_per_s"], GOAL)


if __name__ == "__main__":
    main()
