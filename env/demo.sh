#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on built-in data:
# GPT-2 summarization of the built-in demo dialogues on two ranks (a tiny
# model, a few minutes on a CPU), then ROUGE against the first-line baseline
# and a submission.csv, all in build/out-summarization-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
env/setup.sh
env/build.sh
source env/mpi_env.sh
cd build
mpirun -np 2 apps/summarize "$@"
