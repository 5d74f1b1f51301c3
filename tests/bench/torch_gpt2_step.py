"""A plain PyTorch GPT-2 124M training step, the field's usual baseline for
tandem's (env/gpu-check.sh's torch-baseline): nanoGPT's model in few lines,
bf16 autocast, SDPA's causal attention, fused AdamW, full language modelling
(the head on every position). Prints one line of figures, medians after the
warm-up: ms_per_step, tokens_per_s and tflops (achieved, counted as tandem's
GPTConfig::training_flops counts them: matmuls times 3, causal attention's
half, the head on every position), so that tandem's flops_per_s compares.

    python3 tests/bench/torch_gpt2_step.py [--batch 16] [--seq 1024] [--steps 30] [--device cpu]
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, LAYERS, HEADS, WIDTH, CONTEXT = 50257, 12, 12, 768, 1024


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.c_attn, self.c_proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.c_fc, self.mlp_proj = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.float().view(-1, VOCAB), targets.view(-1))


def training_flops(batch, seq):
    blocks = 2 * seq * LAYERS * 12 * WIDTH * WIDTH
    attention = LAYERS * 2 * 2 * WIDTH * (seq * (seq + 1) / 2)
    head = 2 * seq * VOCAB * WIDTH
    return 3 * (blocks + attention + head) * batch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of the script itself")
    a = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1, fused=dev.type == "cuda")
    data = torch.randint(VOCAB, (a.batch, a.seq + 1), device=dev)
    idx, targets = data[:, :-1], data[:, 1:]
    times, losses = [], []
    for step in range(a.steps):
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    if not all(math.isfinite(l) for l in losses):
        raise SystemExit(f"losses not finite: {losses[:3]}...")
    ms = statistics.median(times[a.warmup:]) * 1000
    print(f"torch={torch.__version__} batch={a.batch} seq={a.seq} ms_per_step={ms:.1f} "
          f"tokens_per_s={a.batch * a.seq * 1000 / ms:.0f} tflops={training_flops(a.batch, a.seq) / ms / 1e9:.1f}"
          + (f" peak_mem_mb={torch.cuda.max_memory_allocated() / 2**20:.0f}" if dev.type == "cuda" else ""))


if __name__ == "__main__":
    main()
