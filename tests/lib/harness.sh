# shellcheck shell=bash
# The frame the shell tests of the launch scripts share (tests/launch,
# tests/slurm): a check that fails says so and the test goes on; at the end
# the test passes only when no check failed and it exits 0. Sourced after the
# test made its scratch folder $tmp; it sets failed=0.
#
#   fail MSG...          prints "FAIL: MSG" and marks the test failed
#   harness_finish STATUS
#                        the end, from the test's EXIT trap with the status the
#                        script is leaving with (1 when a check failed): removes
#                        $tmp after a pass unless harness_keep is set, else says
#                        where it is kept; prints PASS or FAILED, with
#                        harness_label when set (77, a skip, prints neither:
#                        the test said why); exits with that status.
#
#   trap 'harness_finish $?' EXIT    (or a finish of its own that ends in it)
# shellcheck disable=SC2154  # tmp is the test's
: "${tmp:?harness.sh: make the scratch folder \$tmp before sourcing}"
failed=0

fail() {
  echo "FAIL: $*"
  failed=1
}

harness_finish() {
  local status=$1 label=${harness_label:-}
  [ "$failed" -eq 1 ] && status=1
  if [ "$status" -eq 0 ] && [ -z "${harness_keep:-}" ]; then
    rm -rf "$tmp"
  else
    echo "kept $tmp"
  fi
  if [ "$status" -eq 0 ]; then
    echo "PASS${label:+ ($label)}"
  elif [ "$status" -ne 77 ]; then
    echo "FAILED (${label:+$label, }status $status)"
  fi
  exit "$status"
}
