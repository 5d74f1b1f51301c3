#!/usr/bin/env python3
"""The Python baseline of bench_gpt2_train: the same GPT-2 trained in plain
PyTorch eager mode, printed as one JSON line. Run by build/tests/bench/
bench_gpt2_train with the shape, batch, threads and device it uses itself:

  ~/.cache/tandem/venv/bin/python tests/bench/bench_gpt2_train.py --n-layer 4 --n-head 4 \
      --n-embd 128 --vocab 50257 --block 256 --batch 8 --seq 256 \
      --steps 10 --warmup 2 --threads 2 [--device cpu|cuda]

The model is GPT-2 as our C++ one (apps/summarize/model/gpt2.h) builds it:
learned position embeddings, pre-LayerNorm blocks with biases, tanh GELU, a
head tied to the token embedding, GPT-2's initialisation. One step is forward,
a cross-entropy over every next-token position, backward, and AdamW (weight
decay on matrices only), as the C++ bench does. On an error the JSON line
carries "error" and the exit status is 1.
"""
import argparse
import math
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import bench_timing  # noqa: E402 - first: it reports a missing torch
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class SelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        # Fused attention arrived in torch 2.0; before it, the masked softmax.
        self.fused = hasattr(F, "scaled_dot_product_attention")
        if not self.fused:
            mask = torch.ones(block, block, dtype=torch.bool).tril()
            self.register_buffer("allowed", mask.view(1, 1, block, block), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for y in (q, k, v))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q * (1.0 / math.sqrt(k.size(-1)))) @ k.transpose(-2, -1)
            scores = scores.masked_fill(~self.allowed[:, :, :t, :t], float("-inf"))
            y = scores.softmax(dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=1e-5)
        self.attn = SelfAttention(n_embd, n_head, block)
        self.ln_2 = nn.LayerNorm(n_embd, eps=1e-5)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab, block):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head, block) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
        for block_ in self.h:  # residual projections, scaled for depth
            for proj in (block_.attn.c_proj, block_.c_proj):
                nn.init.normal_(proj.weight, 0.0, 0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx, head=True):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block_ in self.h:
            x = block_(x)
        x = self.ln_f(x)
        return self.head(x) if head else x

    def head(self, x):
        return F.linear(x, self.wte.weight)  # tied to wte


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("n-layer", "n-head", "n-embd", "vocab", "block", "batch", "seq", "steps", "warmup", "threads"):
        parser.add_argument("--" + name, type=int, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    model = GPT(a.n_layer, a.n_head, a.n_embd, a.vocab, a.block).to(device).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq), device=device)

    def loss():
        logits = model(idx)
        return F.cross_entropy(logits[:, :-1].reshape(-1, a.vocab), idx[:, 1:].reshape(-1))

    bench_timing.time_training(model, optimizer, loss, device, a.warmup, a.steps, a.batch * a.seq, "tokens_per_s")


if __name__ == "__main__":
    bench_timing.run(main)
