"""A run's TensorBoard events, read by TensorBoard's own EventAccumulator.

  tensorboard_reads_events.py scalars TOY_TRAIN WORK_DIR
      toy_train trains 6 steps with an evaluation every 3; every number of
      every row of metrics.jsonl (the step rows and the eval rows) must come
      back as a scalar of that name at that step, with the value (as
      float32), and nothing else.
  tensorboard_reads_events.py images TB_DIR TAG=PNG ...
      each TAG must be an image of TB_DIR whose bytes are those of the PNG
      file, with its width and height.
  tensorboard_reads_events.py tags TB_DIR TAG ...
      each TAG must be a scalar of TB_DIR with a finite value.

Exit 77: no tensorboard (env/setup.sh --tests installs it in the venv).
"""
import json
import math
import shutil
import struct
import subprocess
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs tensorboard in the venv)")
    sys.exit(77)
import numpy as np


def accumulate(tb_dir):
    events = EventAccumulator(tb_dir, size_guidance={"scalars": 0, "images": 0})
    events.Reload()
    return events


def check_scalars(toy, work):
    shutil.rmtree(work, ignore_errors=True)
    run = subprocess.run([toy, "--set", f"train.out_dir={work}", "--set", "train.max_steps=6",
                          "--set", "train.eval_every=3"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"toy_train failed ({run.returncode}):\n{run.stderr}")
    want = {}
    for line in open(f"{work}/metrics.jsonl"):
        row = json.loads(line)
        for name, value in row.items():
            if name != "step" and isinstance(value, (int, float)):
                want.setdefault(name, []).append((row["step"], value))
    events = accumulate(f"{work}/tb")
    got = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    failures = []
    if sorted(got) != sorted(want):
        failures.append(f"tags: TensorBoard has {sorted(got)}, metrics.jsonl {sorted(want)}")
    for tag, rows in want.items():
        theirs = got.get(tag, [])
        ours = [(step, float(np.float32(value))) for step, value in rows]
        if len(theirs) != len(ours) or any(
                a[0] != b[0] or not (a[1] == b[1] or math.isnan(a[1]) and math.isnan(b[1]))
                for a, b in zip(theirs, ours)):
            failures.append(f"{tag}: TensorBoard {theirs}, metrics.jsonl {ours}")
    print(f"{sum(len(r) for r in want.values())} values of {len(want)} tags checked")
    return failures


def check_images(tb_dir, pairs):
    events = accumulate(tb_dir)
    failures = []
    for pair in pairs:
        tag, png_path = pair.split("=", 1)
        png = open(png_path, "rb").read()
        width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        if tag not in events.Tags()["images"]:
            failures.append(f"{tag}: no such image in {tb_dir} (it has {events.Tags()['images']})")
            continue
        image = events.Images(tag)[-1]
        if image.encoded_image_string != png:
            failures.append(f"{tag}: the image's bytes are not those of {png_path}")
        if (image.width, image.height) != (width, height):
            failures.append(f"{tag}: {image.width}x{image.height}, the PNG is {width}x{height}")
    print(f"{len(pairs)} images checked")
    return failures


def check_tags(tb_dir, tags):
    events = accumulate(tb_dir)
    failures = []
    for tag in tags:
        if tag not in events.Tags()["scalars"]:
            failures.append(f"{tag}: no such scalar in {tb_dir} (it has {events.Tags()['scalars']})")
        elif not math.isfinite(events.Scalars(tag)[-1].value):
            failures.append(f"{tag}: {events.Scalars(tag)[-1].value}")
    print(f"{len(tags)} scalars checked")
    return failures


mode, args = sys.argv[1], sys.argv[2:]
checks = {"scalars": lambda: check_scalars(*args), "images": lambda: check_images(args[0], args[1:]),
          "tags": lambda: check_tags(args[0], args[1:])}
failures = checks[mode]()
for failure in failures:
    print(failure)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
