#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on built-in data.
# Until the summarization app lands, that is the communication self-test on
# two ranks: every collective checked, then a bandwidth table.
set -euo pipefail
cd "$(dirname "$0")/.."
env/setup.sh
env/build.sh
source env/mpi_env.sh
cd build
mpirun -np 2 apps/envcheck --test "$@"
