#!/usr/bin/env python3
"""The Python baseline of bench_resnet_train: the same ResNet trained in plain
PyTorch eager mode, printed as one JSON line. Run by build/tests/bench/
bench_resnet_train with the shape, batch, threads and device it uses itself:

  ~/.cache/tandem/venv/bin/python tests/bench/bench_resnet_train.py --depth 18 --stem imagenet \
      --in-channels 3 --classes 1000 --size 224 --batch 16 --steps 5 --warmup 1 \
      --threads 2 [--device cpu|cuda]

The model is torchvision's resnet18/34 (written out here, so that only
torch is needed), with the "small" stem of our C++ one
(libcore/include/tandem/nn/resnet.h) when asked: 3x3 stride-1 conv1, no
maxpool. One step is forward, cross-entropy, backward and torch.optim.AdamW
(lr 1e-3, weight decay 0.01), as the C++ bench does. On an error the JSON line
carries "error" and the exit status is 1.
"""
import argparse
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import bench_timing  # noqa: E402 - first: it reports a missing torch
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        out += x if self.downsample is None else self.downsample(x)
        return F.relu(out, inplace=True)


class ResNet(nn.Module):
    def __init__(self, depth, stem, in_channels, classes):
        super().__init__()
        blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}[depth]
        self.small = stem == "small"
        self.conv1 = (nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False) if self.small
                      else nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False))
        self.bn1 = nn.BatchNorm2d(64)
        in_planes = 64
        for s, n in enumerate(blocks):
            planes = 64 << s
            layer = []
            for b in range(n):
                layer.append(BasicBlock(in_planes, planes, 2 if b == 0 and s > 0 else 1))
                in_planes = planes
            setattr(self, f"layer{s + 1}", nn.Sequential(*layer))
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        if not self.small:
            x = F.max_pool2d(x, 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("depth", "in-channels", "classes", "size", "batch", "steps", "warmup", "threads"):
        parser.add_argument("--" + name, type=int, required=True)
    parser.add_argument("--stem", choices=("imagenet", "small"), required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    model = ResNet(a.depth, a.stem, a.in_channels, a.classes).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    x = torch.randn(a.batch, a.in_channels, a.size, a.size, device=device)
    y = torch.randint(0, a.classes, (a.batch,), device=device)
    bench_timing.time_training(model, optimizer, lambda: F.cross_entropy(model(x), y), device, a.warmup, a.steps,
                               a.batch, "images_per_s")


if __name__ == "__main__":
    bench_timing.run(main)
