#!/usr/bin/env python3
"""fid_inception_vs_pytorch_fid.py VAVAE_TESTS WORK: vavae's FID Inception-v3
(apps/vavae/metrics/fid_inception.h) against pytorch-fid's InceptionV3 (its
default: FID Inception, resized to 299, pool3), with the same weights on both
sides. No real weights are reachable here, so pytorch-fid's download is
patched to hand over seeded random weights of the file's names and shapes
(torchvision's Inception-v3 with 1008 classes); each BatchNorm's running
statistics are then set from a batch of images, so that every layer's output
has about unit scale and a wrong pool, padding or branch order shows in the
features instead of vanishing in them. The weights go to a safetensors file,
as the docs convert the real one.

Checks, on 4 images of 32 pixels (the size vavae's recipe samples) and 2 of
75 x 50 (not square): features [N, 2048] within 1e-4 of pytorch-fid's, relative
to their largest.

VAVAE_TESTS' FidInceptionPeer case reads WORK/{weights,images}.safetensors
and writes WORK/features.safetensors. Exits 77 (skipped) without the peer.
"""
import os
import subprocess
import sys
from pathlib import Path

try:
    import torch
    from safetensors.torch import load_file, save_file
    import pytorch_fid.inception as fid_inception
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

vavae_tests, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
torch.manual_seed(5)


def random_fid_weights(*args, **kwargs):
    """What pytorch-fid's pt_inception-2015-12-05 file holds, with random values."""
    import torchvision
    net = torchvision.models.inception_v3(num_classes=1008, aux_logits=False, weights=None, init_weights=False)
    net.Mixed_5b = fid_inception.FIDInceptionA(192, pool_features=32)
    net.Mixed_5c = fid_inception.FIDInceptionA(256, pool_features=64)
    net.Mixed_5d = fid_inception.FIDInceptionA(288, pool_features=64)
    net.Mixed_6b = fid_inception.FIDInceptionC(768, channels_7x7=128)
    net.Mixed_6c = fid_inception.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6d = fid_inception.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6e = fid_inception.FIDInceptionC(768, channels_7x7=192)
    net.Mixed_7b = fid_inception.FIDInceptionE_1(1280)
    net.Mixed_7c = fid_inception.FIDInceptionE_2(2048)
    for name, p in net.named_parameters():
        if name.endswith("bn.weight"):
            p.data.uniform_(0.5, 1.5)
        elif name.endswith("bn.bias"):
            p.data.uniform_(-0.2, 0.2)
    weights = {k: v for k, v in net.state_dict().items() if not k.endswith("num_batches_tracked")}
    file_names.extend(weights.keys())
    return weights


file_names = []


fid_inception.load_state_dict_from_url = random_fid_weights
model = fid_inception.InceptionV3([fid_inception.InceptionV3.BLOCK_INDEX_BY_DIM[2048]])

# Running statistics from a batch: each BatchNorm then normalises its input.
calibration = torch.rand(16, 3, 32, 32)
for m in model.modules():
    if isinstance(m, torch.nn.BatchNorm2d):
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one batch gives its own statistics
model.train()
with torch.no_grad():
    model(calibration)
model.eval()

state = {k: v.contiguous() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
# pytorch-fid's wrapper holds the layers as blocks.I.J; its file, and tandem, use torchvision's names.
inception_names = [n for n in file_names if not n.startswith("fc.")]
wrapper_names = list(state.keys())
assert len(inception_names) == len(wrapper_names), (len(inception_names), len(wrapper_names))
weights = {ours: state[theirs] for ours, theirs in zip(inception_names, wrapper_names)}
for ours, theirs in zip(inception_names, wrapper_names):
    assert ours.split(".")[-1] == theirs.split(".")[-1] and weights[ours].shape == state[theirs].shape, (ours, theirs)
weights["fc.weight"] = torch.zeros(1008, 2048)
save_file(weights, str(work / "weights.safetensors"))

failures = []
for images in (torch.rand(4, 3, 32, 32), torch.rand(2, 3, 75, 50)):
    save_file({"images": images.contiguous()}, str(work / "images.safetensors"))
    run = subprocess.run([vavae_tests, "--gtest_filter=FidInceptionPeer.*"],
                         env={**os.environ, "TANDEM_PEER_INCEPTION_DIR": str(work)}, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        sys.exit(f"FAIL: {vavae_tests} --gtest_filter=FidInceptionPeer.* exited {run.returncode}")
    ours = load_file(str(work / "features.safetensors"))["features"]
    with torch.no_grad():
        theirs = model(images)[0].squeeze(3).squeeze(2)
    scale = theirs.abs().max().item()
    error = (ours - theirs).abs().max().item() / scale
    ok = ours.shape == theirs.shape and error < 1e-4 and scale > 1e-3
    what = (f"{tuple(images.shape)}: features {tuple(ours.shape)}, largest difference {error:.2e} of the largest "
            f"feature ({scale:.3g})")
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)

if failures:
    sys.exit(f"FAILED: {len(failures)} check(s)")
print("FID Inception-v3: the same pool3 features as pytorch-fid's on the same weights")
