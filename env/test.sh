#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test. Extra arguments go to
# ctest (e.g. env/test.sh -L unit, or -R unit.train.ema: a GoogleTest file is
# one test, named PROGRAM.FOLDER.FILE, its cases listed in its output).
set -euo pipefail
cd "$(dirname "$0")/.."
env/setup.sh --tests
env/build.sh
source env/mpi_env.sh
cd build
# An idle OpenMP thread spins for a while before it sleeps, taking a core
# another test needs: passive, the suite used 8% less CPU (docs/building.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# One test more than there are cores: much of the suite waits (Slurm's
# daemons, a watchdog's timeout, a stopped rank), and the extra test fills
# those cores (docs/building.md has the figures).
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
ctest --output-on-failure --parallel "${TANDEM_JOBS:-$((cores + 1))}" "$@"
