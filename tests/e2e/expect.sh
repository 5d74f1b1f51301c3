#!/usr/bin/env bash
# expect.sh STATUS REGEX [REGEX...] -- COMMAND...
# Runs COMMAND; passes when it exits with STATUS ("nonzero" for any failure)
# and some line of its combined output matches each extended REGEX
# (expect_run in expect_lib.sh).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect_lib.sh"
expect_run expect.sh "$@"
