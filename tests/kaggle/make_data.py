#!/usr/bin/env python3
"""make_data.py FIXTURE FASHION_MNIST OUT: small datasets in the layouts
kaggle/tandem.ipynb attaches, from Debian's Fashion-MNIST through tests/vavae's
fixture (vavae_fashion_mnist_split), so the notebook's test needs no data of
its own:

  OUT/carotid/images/<person>/*.png, OUT/carotid/labels.csv
      T-shirts (label 0) and trousers (label 1), 28x28 gray, three images a
      person, 20 persons a label: enough for a test split with both labels
  OUT/vavae/data_split/{train,val}/user{1..4}/*.png
      four classes as four users, 32x32 (the tiny VAE's size)

Exits with the fixture's status when it fails (77: no Fashion-MNIST here).
"""
import shutil
import subprocess
import sys
from pathlib import Path

PER_PERSON = 3
IMAGES_PER_LABEL = 60


def fixture(binary, src, out, users, train_per, val_per, size):
    status = subprocess.run([binary, src, str(out), str(users), str(train_per), str(val_per), str(size)]).returncode
    if status != 0:
        sys.exit(status)


def carotid(binary, src, out):
    classes = out / "classes"
    fixture(binary, src, classes, 2, IMAGES_PER_LABEL, 0, 28)
    rows = ["id,label"]
    for label, user in enumerate(["user1", "user2"]):
        images = sorted((classes / "train" / user).glob("*.png"))
        for first in range(0, len(images), PER_PERSON):
            person = f"p{label}{first // PER_PERSON:02d}"
            folder = out / "images" / person
            folder.mkdir(parents=True)
            for image in images[first:first + PER_PERSON]:
                shutil.copy(image, folder / image.name)
            rows.append(f"{person},{label}")
    (out / "labels.csv").write_text("\n".join(rows) + "\n")
    shutil.rmtree(classes)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, src, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    shutil.rmtree(out, ignore_errors=True)
    carotid(binary, src, out / "carotid")
    fixture(binary, src, out / "vavae" / "data_split", 4, 24, 4, 32)


if __name__ == "__main__":
    main()
