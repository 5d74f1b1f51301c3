#!/usr/bin/env python3
"""One rank of the Python side of bench_dit_ddp.py: LightningDiT's
class-conditional DiT trained with rectified flow, as its authors' PyTorch
code does it, under torchrun + DDP.

    torchrun --nproc_per_node 2 dit_ddp_peer.py --latents train.h5 --depth 12 --hidden 768 --heads 12 ...

The network is the one apps/vavae builds (apps/vavae/model/dit.h), written
here in plain PyTorch: patch embedding plus a fixed 2D sin-cos position
table, blocks of attention with 2D RoPE on q and k (F.scaled_dot_product_
attention) and a SwiGLU MLP under RMSNorm, each modulated by adaLN-Zero from
the timestep and label embeddings, and a modulated final projection. A step
draws a batch of latents (normalised per channel with the file's mean and
std), drops a tenth of the labels to the null class, pairs each latent with
Gaussian noise at a logit-normal timestep, and regresses the velocity with
MSE; AdamW (betas 0.9/0.95, weight decay on matrices only), the gradient
norm clipped at 1, and an EMA of the weights (0.9999) updated after each step
as LightningDiT's train loop does, which is also tandem's DiT recipe. Rank 0 prints one
JSON line: per-step milliseconds and samples after the warm-up, seconds from
BENCH_T0 to the end of the first step, and peak RSS of rank 0.
"""
import argparse
import copy
import math
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import h5py  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from peer_steps import StepTimes  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def sincos_1d(dim, positions):
    omega = 10000.0 ** (-torch.arange(dim // 2, dtype=torch.float64) / (dim / 2))
    angles = torch.outer(positions, omega)
    return torch.cat([angles.sin(), angles.cos()], 1)


def sincos_2d(dim, grid):
    index = torch.arange(grid * grid, dtype=torch.float64)
    rows = torch.floor(index / grid)
    cols = index - rows * grid
    return torch.cat([sincos_1d(dim // 2, cols), sincos_1d(dim // 2, rows)], 1).float()


class VisionRope(nn.Module):
    """Rows then columns, each angle for a pair of dimensions."""

    def __init__(self, head_dim, grid, theta=10000.0):
        super().__init__()
        half = head_dim // 2
        inv_freq = theta ** (-torch.arange(0, half, 2, dtype=torch.float64) / half)
        axis = torch.outer(torch.arange(grid, dtype=torch.float64), inv_freq).repeat_interleave(2, 1)
        rows = axis.unsqueeze(1).expand(grid, grid, half)
        cols = axis.unsqueeze(0).expand(grid, grid, half)
        angles = torch.cat([rows, cols], -1).reshape(grid * grid, head_dim)
        self.register_buffer("cos", angles.cos().float())
        self.register_buffer("sin", angles.sin().float())

    def forward(self, x):
        pairs = x.unflatten(-1, (-1, 2))
        rotated = torch.stack([-pairs[..., 1], pairs[..., 0]], -1).flatten(-2)
        return x * self.cos + rotated * self.sin


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)

    def forward(self, x, rope):
        n, t, c = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(rope(q), rope(k), v)
        return self.proj(out.transpose(1, 2).reshape(n, t, c))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w12, self.w3 = nn.Linear(dim, 2 * hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        a, b = self.w12(x).chunk(2, -1)
        return self.w3(F.silu(a) * b)


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class Block(nn.Module):
    def __init__(self, hidden, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1, self.attn = RMSNorm(hidden), Attention(hidden, heads)
        self.norm2, self.mlp = RMSNorm(hidden), SwiGLU(hidden, int(2 / 3 * hidden * mlp_ratio))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x, c, rope):
        s1, sc1, g1, s2, sc2, g2 = self.adaLN_modulation(c).chunk(6, 1)
        x = x + g1.unsqueeze(1) * self.attn(modulate(self.norm1(x), s1, sc1), rope)
        return x + g2.unsqueeze(1) * self.mlp(modulate(self.norm2(x), s2, sc2))


class DiT(nn.Module):
    def __init__(self, input_size, channels, patch, hidden, depth, heads, num_classes):
        super().__init__()
        self.channels, self.patch, self.grid = channels, patch, input_size // patch
        self.x_embedder = nn.Conv2d(channels, hidden, patch, patch)
        self.t_embedder = nn.Sequential(nn.Linear(256, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.y_embedder = nn.Embedding(num_classes + 1, hidden)
        self.register_buffer("pos_embed", sincos_2d(hidden, self.grid).unsqueeze(0))
        self.rope = VisionRope(hidden // heads, self.grid)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(depth))
        self.norm_final = RMSNorm(hidden)
        self.final_adaLN = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))
        self.linear = nn.Linear(hidden, patch * patch * channels)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.normal_(self.y_embedder.weight, std=0.02)
        for linear in [b.adaLN_modulation[1] for b in self.blocks] + [self.final_adaLN[1], self.linear]:
            nn.init.zeros_(linear.weight)
            nn.init.zeros_(linear.bias)

    @staticmethod
    def timestep_embedding(t, dim=256):
        half = dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        args = t.float().unsqueeze(1) * freqs.unsqueeze(0)
        return torch.cat([args.cos(), args.sin()], -1)

    def forward(self, x, t, y):
        h = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(self.timestep_embedding(t)) + self.y_embedder(y)
        for block in self.blocks:
            h = block(h, c, self.rope)
        shift, scale = self.final_adaLN(c).chunk(2, 1)
        out = self.linear(modulate(self.norm_final(h), shift, scale))
        n, g, p, ch = x.shape[0], self.grid, self.patch, self.channels
        return out.reshape(n, g, g, p, p, ch).permute(0, 5, 1, 3, 2, 4).reshape(n, ch, g * p, g * p)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latents", required=True)
    for name in ("depth", "hidden", "heads", "patch", "micro-batch", "steps", "warmup"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--class-dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(a.seed)
    torch.distributed.init_process_group("gloo")
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()

    with h5py.File(a.latents, "r") as f:
        latents = torch.from_numpy(f["latents"][:])
        labels = torch.from_numpy(f["user_ids"][:]) - 1
        mean, std = torch.from_numpy(f["mean"][:]), torch.from_numpy(f["std"][:])
        num_classes = int(f.attrs["num_users"])
    latents = (latents - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)
    model = DiT(latents.shape[-1], latents.shape[1], a.patch, a.hidden, a.depth, a.heads, num_classes)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95))
    ema = copy.deepcopy(model).requires_grad_(False)
    model = torch.nn.parallel.DistributedDataParallel(model.train())

    order = torch.randperm(len(latents), generator=torch.Generator().manual_seed(a.seed))
    global_batch = a.micro_batch * world
    times = StepTimes(a.warmup)
    for step in range(a.warmup + a.steps):
        start = time.perf_counter()
        begin = (step * global_batch) % (len(order) - global_batch + 1)
        rows = order[begin + rank * a.micro_batch: begin + (rank + 1) * a.micro_batch]
        x1, y = latents[rows], labels[rows]
        y = torch.where(torch.rand(len(y)) < a.class_dropout, torch.full_like(y, num_classes), y)
        x0 = torch.randn_like(x1)
        t = torch.sigmoid(torch.randn(len(y)))
        tb = t.view(-1, 1, 1, 1)
        loss = F.mse_loss(model(tb * x1 + (1 - tb) * x0, t, y), x1 - x0)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        with torch.no_grad():
            for e, q in zip(ema.parameters(), model.module.parameters()):
                e.mul_(0.9999).add_(q, alpha=1 - 0.9999)
        times.record(step, start, global_batch)
    if rank == 0:
        times.report(loss.item())
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
