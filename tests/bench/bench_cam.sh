#!/usr/bin/env bash
# bench_cam.sh BUILD MODEL INPUT [RANKS]: what `carotid predict --cam` costs
# over predicting alone, on the same images in one run: each way timed by
# the program's own log (the first line after the images are read to the
# last), best of 2, then ms per image and the ratio. MODEL: a model file;
# INPUT: a folder of person folders (../shared/data/breast_ultrasound/images).
# The CAM pass is one forward per image and model (nn/grad_cam.h) plus the
# pictures, which rank 0 writes.
set -euo pipefail
build=${1:?usage: bench_cam.sh BUILD MODEL INPUT [RANKS]} model=$2 input=$3 ranks=${4:-1}
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../../env/mpi_env.sh"
run() { # run NAME [FLAGS]: seconds from the first log line to the last
  local name=$1
  shift
  mpiexec -n "$ranks" "$build/apps/carotid" predict --model "$model" --input "$input" --out "$work/$name" "$@" \
    >"$work/$name.log" 2>&1 || { tail -n 5 "$work/$name.log"; exit 1; }
  python3 - "$work/$name.log" <<'PY'
import re, sys
from datetime import datetime
stamps = [datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
          for m in (re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) r0", l) for l in open(sys.argv[1])) if m]
print((stamps[-1] - stamps[0]).total_seconds())
PY
  rm -rf "$work/$name"
}
best() { local a b; a=$(run "$@"); b=$(run "$@"); python3 -c "print(min($a, $b))"; }
plain=$(best plain)
cam=$(best cam --cam)
run count --cam >/dev/null || true
images=$(grep -o "predictions: [0-9]* images" "$work/count.log" | grep -o "[0-9]*")
python3 - "$plain" "$cam" "$images" "$ranks" <<'PY'
import sys
plain, cam, n, ranks = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(f"{n} images, {ranks} rank(s): predict {1000 * plain / n:.2f} ms an image, with --cam {1000 * cam / n:.2f} "
      f"({cam / plain:.2f}x); the maps and pictures {1000 * (cam - plain) / n:.2f} ms an image")
PY
