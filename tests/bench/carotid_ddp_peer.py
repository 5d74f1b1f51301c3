#!/usr/bin/env python3
"""One rank of the Python side of bench_carotid_ddp.py: a person-level image
classifier trained as users write it with torchvision, under torchrun + DDP.

    torchrun --nproc_per_node 2 carotid_ddp_peer.py --root IMAGES --labels label.xlsx --size 28 ...

The images are decoded once up front (PIL, gray or RGB as --channels says),
as tandem's image cache does, and each training view is made by torchvision's
transforms v2 with the augmentation tandem's defaults describe: a random
resized crop of 80-100% of the area, a horizontal flip half the time, a
rotation within 10 degrees, brightness and contrast within 10%. One
DataLoader worker per rank prepares the next batches while the model trains,
as tandem's loader thread does. The model is torchvision's resnet18 with the
small-image stem tandem uses below 96 pixels (3x3 stride-1 conv1, no
maxpool) and one input channel for gray images; cross-entropy, AdamW (weight
decay on matrices and convolutions only, as tandem's), no clipping. Rank 0
prints one JSON line: per-step milliseconds and images after the warm-up,
seconds from BENCH_T0 to the end of the first step, and peak RSS of rank 0.
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import numpy as np  # noqa: E402
import openpyxl  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

from peer_steps import StepTimes  # noqa: E402


def labelled_images(root, labels_xlsx, channels):
    """Every image of every person the sheet labels, decoded: [N, C, H, W] uint8, and labels [N]."""
    sheet = openpyxl.load_workbook(labels_xlsx, read_only=True).worksheets[0]
    rows = list(sheet.iter_rows(values_only=True))
    label_of = {str(r[0]): int(r[1]) for r in rows[1:] if r[0] is not None}
    images, labels = [], []
    for person in sorted(os.listdir(root)):
        if person not in label_of:
            continue
        for name in sorted(os.listdir(os.path.join(root, person))):
            image = Image.open(os.path.join(root, person, name)).convert("L" if channels == 1 else "RGB")
            array = np.array(image)
            images.append(torch.from_numpy(array.reshape(array.shape[0], array.shape[1], -1)).permute(2, 0, 1))
            labels.append(label_of[person])
    return images, torch.tensor(labels)


class Views(torch.utils.data.Dataset):
    def __init__(self, images, labels, size):
        self.images, self.labels = images, labels
        self.transform = v2.Compose([
            v2.ToDtype(torch.float32, scale=True),
            v2.RandomResizedCrop(size, scale=(0.8, 1.0), antialias=True),
            v2.RandomHorizontalFlip(0.5),
            v2.RandomRotation(10),
            v2.ColorJitter(brightness=0.1, contrast=0.1),
        ])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), self.labels[i]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--labels", required=True)
    for name in ("channels", "size", "micro-batch", "steps", "warmup"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(a.seed)
    torch.distributed.init_process_group("gloo")
    rank = torch.distributed.get_rank()

    images, labels = labelled_images(a.root, a.labels, a.channels)
    model = torchvision.models.resnet18(num_classes=int(labels.max()) + 1)
    model.conv1 = torch.nn.Conv2d(a.channels, 64, 3, 1, 1, bias=False)
    model.maxpool = torch.nn.Identity()
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=a.lr)
    model = torch.nn.parallel.DistributedDataParallel(model.train())

    dataset = Views(images, labels, a.size)
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, seed=a.seed, drop_last=True)
    loader = torch.utils.data.DataLoader(dataset, batch_size=a.micro_batch, sampler=sampler, num_workers=1,
                                         persistent_workers=True, drop_last=True)
    times, step, epoch = StepTimes(a.warmup), 0, 0
    while step < a.warmup + a.steps:
        sampler.set_epoch(epoch)
        epoch += 1
        batches = iter(loader)
        while step < a.warmup + a.steps:
            start = time.perf_counter()
            try:
                x, y = next(batches)
            except StopIteration:
                break
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            times.record(step, start, a.micro_batch * torch.distributed.get_world_size())
            step += 1
    if rank == 0:
        times.report(loss.item())
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
