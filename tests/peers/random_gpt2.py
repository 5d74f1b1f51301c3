"""The small random transformers GPT-2 the peer tests compare tandem's GPT-2 on."""
import os
import shutil

import torch
from transformers import GPT2Config, GPT2LMHeadModel

# Two rows of ten GPT-2 token ids ("Hello world, I'm a test.<|endoftext|>I" and
# "The quick brown fox jumps over the lazy dog.").
IDS = torch.tensor([[15496, 995, 11, 314, 1101, 257, 1332, 13, 50256, 40],
                    [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13]])


def saved_random_gpt2(work, seed):
    """A fresh WORK, and in WORK/hf (save_pretrained) a 2-layer GPT-2 of width
    64 with GPT-2's vocabulary, drawn from `seed`; returns the model in eval mode."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=50257, n_positions=128, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(config).eval()
    # GPT-2's initialisation (std 0.02) leaves a random model's next-token
    # scores nearly flat, and its greedy text one repeated token: wider
    # weights make the continuation vary, so that matching it means something.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.15)
    model.save_pretrained(os.path.join(work, "hf"), safe_serialization=True)
    return model
