#!/usr/bin/env python3
"""grad_cam_vs_pytorch_grad_cam.py UNIT_TESTS WORK: tandem's Grad-CAM
(libcore/include/tandem/nn/grad_cam.h) against the grad-cam package
(pytorch-grad-cam) on the same ResNet-18 and images: torchvision's resnet18
with random weights and BatchNorm statistics (so evaluation mode matters),
two classes, saved as safetensors and loaded by both; for the "small" stem,
torchvision's model with its first convolution made 3x3 stride 1 and its
max-pool removed, as tandem builds it. GradCAM(target_layers=[layer4[-1]])
with ClassifierOutputTarget of a class per image, half of them the less
probable one. Maps within 1e-4 of each other at 32 and 64 pixels.

UNIT_TESTS' GradCamPeer case reads WORK/STEM_weights.safetensors and
WORK/STEM_inputs.safetensors and writes WORK/STEM_tandem.safetensors. Exits
77 (skipped) without torch, torchvision, safetensors or grad-cam.
"""
import os
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import torch
    import torchvision
    from safetensors.torch import load_file, save_file
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

unit_tests, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
torch.manual_seed(11)
SIZES = {"small": 32, "imagenet": 64}


def resnet(stem):
    model = torchvision.models.resnet18(num_classes=2)
    if stem == "small":
        model.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        model.maxpool = torch.nn.Identity()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 2.0)
    return model.eval()


reference = {}
for stem, size in SIZES.items():
    model = resnet(stem)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(work / f"{stem}_weights.safetensors"))
    images = torch.randn(6, 3, size, size)
    with torch.no_grad():
        ranked = model(images).argsort(dim=1, descending=True)
    classes = torch.tensor([int(ranked[i, i % 2]) for i in range(len(images))])
    save_file({"images": images, "classes": classes}, str(work / f"{stem}_inputs.safetensors"))
    cam = GradCAM(model=model, target_layers=[model.layer4[-1]])
    reference[stem] = cam(input_tensor=images, targets=[ClassifierOutputTarget(int(c)) for c in classes])

env = dict(os.environ, TANDEM_PEER_GRAD_CAM_DIR=str(work))
run = subprocess.run([unit_tests, "--gtest_filter=GradCamPeer.*"], env=env, capture_output=True, text=True)
if run.returncode != 0:
    print(run.stdout[-3000:], run.stderr[-3000:])
    sys.exit(1)
ok = True
for stem, want in reference.items():
    got = load_file(str(work / f"{stem}_tandem.safetensors"))["maps"].numpy()
    diff = np.abs(got - want).max()
    print(f"{stem} stem, {want.shape[0]} maps of {want.shape[1]}x{want.shape[2]}: largest difference {diff:.2e}")
    ok = ok and got.shape == want.shape and diff <= 1e-4
sys.exit(0 if ok else 1)
