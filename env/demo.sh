#!/usr/bin/env bash
# Installs what is missing, builds what the demo runs (summarize; env/test.sh
# builds the tests and benchmarks), and runs the main job on built-in data:
# GPT-2 summarization of the built-in demo dialogues on two ranks (a tiny
# model, a few minutes on a CPU), then ROUGE against the first-line baseline
# and a submission.csv, all in build/out-summarization-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
env/setup.sh
env/build.sh --target summarize
source env/mpi_env.sh
# The same figures run to run, and as near the README's as another x86-64 CPU
# allows (docs/running.md has the figures seen): one LibTorch thread per
# rank (what a 2-core machine gets anyway; more threads split sums
# differently), and ATen's and MKL's AVX2 kernels even where the CPU has
# AVX-512, whose kernels round in another order. Set any of them to override.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2}
export MKL_CBWR=${MKL_CBWR:-AVX2}
cd build
mpirun -np 2 apps/summarize "$@"
