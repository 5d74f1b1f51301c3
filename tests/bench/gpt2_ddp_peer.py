#!/usr/bin/env python3
"""One rank of the Python side of bench_gpt2_ddp.py: the seeds' recipe for
fine-tuning GPT-2 on summaries, under torchrun + DDP or under Accelerate.

    torchrun --nproc_per_node 2 gpt2_ddp_peer.py --launcher torchrun --tokens CACHE.h5 ...
    accelerate launch --cpu --num_processes 2 --mpirun_hostfile H gpt2_ddp_peer.py --launcher accelerate ...

The model is bench_gpt2_train.py's GPT (built as tandem's), the data the very
token sequences tandem trains on (its token cache, read with h5py): each step
draws a global batch from a seeded permutation, each rank takes its slice,
pads it to its longest row with <|endoftext|>, and the loss is the
cross-entropy over the full logits, masked to the summary tokens, as nanoGPT's
fine-tuning recipes do (--head summary runs the head only where a summary
token is predicted, as tandem does, to compare the runtimes alone). AdamW (weight decay 0.1 on matrices, betas 0.9/0.999)
and gradient clipping at 1.0, as tandem's defaults. Rank 0 prints one JSON
line: per-step milliseconds and real tokens of the steps after the warm-up,
seconds from BENCH_T0 (the driver's launch time) to the end of the first
step, and peak RSS of rank 0.
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench_gpt2_train import GPT  # noqa: E402
from peer_steps import StepTimes  # noqa: E402

EOT = 50256  # GPT-2's <|endoftext|>, tandem's padding


def batch_rows(ids, offsets, prompt_len, rows):
    length = max(int(offsets[r + 1] - offsets[r]) for r in rows)
    idx = torch.full((len(rows), length), EOT, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.bool)
    real = 0
    for i, r in enumerate(rows):
        seq = ids[offsets[r]:offsets[r + 1]]
        idx[i, : len(seq)] = torch.from_numpy(seq.astype(np.int64))
        mask[i, int(prompt_len[r]): len(seq)] = True
        real += len(seq)
    return idx, mask, real


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", choices=["torchrun", "accelerate"], required=True)
    p.add_argument("--tokens", required=True)
    for name in ("n-layer", "n-head", "n-embd", "block", "micro-batch", "steps", "warmup"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--head", choices=["full", "summary"], default="full",
                   help="full: the seeds' recipe; summary: the head only where a summary token is predicted, as tandem")
    a = p.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(a.seed)

    model = core = GPT(a.n_layer, a.n_head, a.n_embd, 50257, a.block).train()
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    if a.launcher == "torchrun":
        torch.distributed.init_process_group("gloo")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        model = torch.nn.parallel.DistributedDataParallel(model)
        backward = torch.Tensor.backward
        clip = lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: E731
    else:
        from accelerate import Accelerator
        accelerator = Accelerator(cpu=True)
        rank, world = accelerator.process_index, accelerator.num_processes
        model, optimizer = accelerator.prepare(model, optimizer)
        backward = accelerator.backward
        clip = lambda: accelerator.clip_grad_norm_(model.parameters(), 1.0)  # noqa: E731

    with h5py.File(a.tokens, "r") as f:
        ids, offsets, prompt_len = f["ids"][:], f["offsets"][:], f["prompt_len"][:]
    order = np.random.default_rng(a.seed).permutation(len(prompt_len))
    global_batch = a.micro_batch * world

    times = StepTimes(a.warmup)
    for step in range(a.warmup + a.steps):
        start = time.perf_counter()
        begin = (step * global_batch) % (len(order) - global_batch + 1)
        picked = order[begin: begin + global_batch]
        idx, mask, _ = batch_rows(ids, offsets, prompt_len, picked[rank * a.micro_batch:(rank + 1) * a.micro_batch])
        if a.head == "full":
            logits = model(idx)
            targets = idx[:, 1:].masked_fill(~mask[:, 1:], -100)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
        else:
            hidden = model(idx, head=False)
            predicts = mask[:, 1:]
            loss = F.cross_entropy(core.head(hidden[:, :-1][predicts]), idx[:, 1:][predicts])
        optimizer.zero_grad(set_to_none=True)
        backward(loss)
        clip()
        optimizer.step()
        times.record(step, start, sum(int(offsets[r + 1] - offsets[r]) for r in picked))
    if rank == 0:
        times.report(loss.item())
    if a.launcher == "torchrun":
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
