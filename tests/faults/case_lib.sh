# Sourced by the fault scripts that run several named cases: a fresh work
# folder (the current one, removed at exit) and fail(), which names the case
# in $case_name and shows the end of its log, $work/$case_name.log.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
case_name=""
fail() { echo "FAIL ($case_name): $*"; tail -20 "$work/$case_name.log" 2>/dev/null; exit 1; }
