#!/usr/bin/env python3
"""ResNet-18 image classification on 2 ranks: `mpirun -np 2 apps/carotid train`
against torchvision's ResNet-18 under torchrun + DDP (carotid_ddp_peer.py).

    bench_carotid_ddp.py CAROTID [--data ../shared/data/breast_ultrasound] [--size 28]
        [--micro-batch 32] [--steps 12] [--warmup 3] [--rounds 2] [--results FILE]

Both sides train the same network (ResNet-18, small-image stem below 96
pixels) on the same decoded images (BreastMNIST's 28x28 gray PNGs, decoded
once before training), with the same augmentation, micro batch per rank,
AdamW settings and one compute thread per rank (OMP_NUM_THREADS=1, 2 ranks on
2 cores), each with one loader worker preparing the next batches. tandem
trains on its person-level training split (70% of the persons), the peer on
every image: images/s of a step does not depend on which images they are.
Warm-up steps are excluded; the sides alternate ROUNDS times and each keeps
its best round. Figures: images/s, ms/step, seconds from launch to the end
of the first step, peak RSS of rank 0.
--results appends the figures to env/bench.sh's table (results.py).
Exit 77 when torchvision or openpyxl is missing (env/setup.sh --bench), or
the data is not there.
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
    import openpyxl  # noqa: F401  (the peer runs in its own processes)
    import torch
    import torchvision  # noqa: F401
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --bench installs the peers in the venv)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "carotid_ddp_peer.py")
WORLD = 2
GOAL = 1.1  # the issue's: tandem's images/s over torchvision + DDP's


def run_tandem(a, work, env):
    out = os.path.join(work, "tandem")
    shutil.rmtree(out, ignore_errors=True)
    total = a.warmup + a.steps
    t0 = time.time()
    # Evaluation and checkpoints only at the end, outside the timed steps;
    # a constant learning rate and no clipping, as the peer trains.
    run(["mpirun", "-np", str(WORLD), a.carotid, "train",
         "--set", f"data.root={a.data}/images", "--set", f"data.label_file={a.data}/label.xlsx",
         "--set", f"data.channels={a.channels}", "--set", f"data.image_size={a.size}",
         "--set", f"data.cache_dir={work}/cache", "--set", "data.num_workers=1",
         "--set", f"train.micro_batch={a.micro_batch}", "--set", f"train.max_steps={total}",
         "--set", f"train.eval_every={total}", "--set", "train.ckpt_every=0", "--set", "train.log_every=1",
         "--set", "train.schedule=constant", "--set", "train.warmup_steps=0", "--set", "train.lr=1e-3",
         "--set", "train.weight_decay=0.01", "--set", "train.grad_clip=0", "--set", f"cmd.run_dir={out}"],
        env, os.path.join(work, "tandem.log"))
    return tandem_summary("tandem", "images", out, a.warmup, t0)


def run_peer(a, work, env):
    args = ["--root", f"{a.data}/images", "--labels", f"{a.data}/label.xlsx", "--channels", str(a.channels),
            "--size", str(a.size), "--micro-batch", str(a.micro_batch), "--steps", str(a.steps),
            "--warmup", str(a.warmup)]
    log = os.path.join(work, "torchrun.log")
    run(torchrun(a.python, WORLD, PEER, args), dict(env, BENCH_T0=repr(time.time())), log)
    return peer_summary("torchrun", "images", log)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("carotid")
    p.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "breast_ultrasound"))
    p.add_argument("--channels", type=int, default=1)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--python", default=sys.executable, help="the venv's Python: torchrun beside it")
    p.add_argument("--results", help="append the figures to env/bench.sh's table")
    a = p.parse_args()
    a.carotid = os.path.abspath(a.carotid)
    a.data = os.path.abspath(a.data)
    if not os.path.isfile(os.path.join(a.data, "label.xlsx")):
        print(f"skipped: {a.data}/label.xlsx not found (../shared/data)")
        sys.exit(77)
    if min(a.size, a.micro_batch, a.steps, a.rounds) < 1 or a.warmup < 0:
        p.error("--size, --micro-batch, --steps and --rounds must be positive, --warmup not negative")

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")
    best = {}
    with tempfile.TemporaryDirectory(prefix="bench-carotid-ddp.") as work:
        for round_ in range(a.rounds):
            for side, runner in (("tandem", run_tandem), ("torchrun", run_peer)):
                r = runner(a, work, env)
                print(f"# round {round_ + 1} {side}: {r['images_per_s']:.0f} images/s, {r['ms_per_step']:.0f} ms/step",
                      flush=True)
                keep_best(best, r, "images_per_s")

    ours, theirs = best["tandem"], best["torchrun"]
    ratio = ours["images_per_s"] / theirs["images_per_s"]
    print(f"\nResNet-18 at {a.size} px, {WORLD} ranks x 1 thread, micro batch {a.micro_batch}, "
          f"torch {torch.__version__}, best of {a.rounds}:\n")
    print("| side | images/s | ms/step | first step (s) | peak RSS rank 0 (MB) | tandem / side |")
    print("|---|---|---|---|---|---|")
    for r in (ours, theirs):
        print(f"| {r['side']} | {r['images_per_s']:.0f} | {r['ms_per_step']:.0f} | {r['first_step_s']:.1f} | "
              f"{r['peak_rss_mb']:.0f} | {ours['images_per_s'] / r['images_per_s']:.2f}x |")
    results.add(a.results, "ResNet-18 DDP",
                f"ResNet-18 training at {a.size} px, {WORLD} ranks x 1 thread, global batch {a.micro_batch * WORLD}",
                f"{ours['images_per_s']:.0f} images/s", f"torchvision + DDP: {theirs['images_per_s']:.0f} images/s",
                ratio, GOAL)


if __name__ == "__main__":
    main()
