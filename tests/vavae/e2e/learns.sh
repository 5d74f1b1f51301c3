#!/usr/bin/env bash
# learns.sh [BUILD]: whether the tiny vavae pipeline learns the condition, at
# its job's whole budget (jobs/vavae-tiny.toml; about 6 minutes on 2 cores):
# pipeline.sh's checks, and evaluate's conditional accuracy of the samples at
# least twice chance. ctest's vavae_fashion_mnist_2ranks runs the same
# pipeline on a fraction of the budget and checks that the losses fall.
#   cd build && ../tests/vavae/e2e/learns.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-.}" && pwd)
# shellcheck source=env/mpi_env.sh
source "$repo/env/mpi_env.sh"
# shellcheck source=env/python.sh
source "$repo/env/python.sh"
exec "$here/pipeline.sh" "$build/apps/vavae" "$build/tests/vavae_fashion_mnist_split" "$(command -v mpiexec)" \
  "$repo/jobs/vavae-tiny.toml" /usr/share/datasets/fashion-mnist "$build/tests/vavae-learns" "$TANDEM_PYTHON" \
  "$repo/tests/peers/tensorboard_reads_events.py" learns
