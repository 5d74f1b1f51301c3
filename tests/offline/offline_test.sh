#!/bin/bash
# The offline bundle (env/bundle.sh), as faithfully as one machine allows.
#
#   tests/offline/offline_test.sh CASE REPO WORK
#     make          env/bundle.sh WORK/bundle --with-tests (the fixture the
#                   others use); its size and file count go to the log
#     runtime       env/bundle.sh --no-install on a machine that seems to
#                   lack the tests' packages, as Kaggle's does (a dpkg-query
#                   in front says GoogleTest, zlib's headers and libxlsxwriter
#                   are not installed): made all the same, without them, its
#                   MANIFEST saying "# tests none"
#     build         a fresh copy of REPO built with `env/build.sh --bundle` in a
#                   namespace with no network (unshare -n) where this machine's
#                   copies of what the bundle holds are hidden (unshare -m: each
#                   such file covered by an empty one, each of its header
#                   folders by an empty folder), except the libraries the
#                   compiler, CMake and Python themselves load. Then: ldd of
#                   every built program resolves each library to the bundle,
#                   torch's site-packages or the C and C++ runtime; envcheck
#                   and a 2-rank summarize run go through the bundle's mpirun
#     bad-missing   a file removed:           exit 2, the file named
#     bad-checksum  a file changed:           exit 2, the file named
#     bad-extra     a file not in MANIFEST:   exit 2, the file named
#     bad-arch      made for another CPU:     exit 2, both architectures named
#     bad-lacks     a needed library absent:  exit 2, the library named
#     bad-folder    a build folder configured with this machine's libraries
#                   given --bundle: exit 2, the folder named, its cache untouched
#     kaggle-bad    kaggle/run.sh --bundle with a damaged bundle: exit 2 before
#                   any build or package install
#     kaggle-run    kaggle/run.sh --bundle with the program 'build' made: a
#                   5-step summarize run through the bundle's mpirun, in a
#                   namespace with no network, installing nothing
# Skipped (77) where unshare is not allowed (build).
set -uo pipefail
case_name=${1:?usage: offline_test.sh CASE REPO WORK}
repo=$(cd "${2:?REPO}" && pwd)
work=${3:?WORK}
mkdir -p "$work"
work=$(cd "$work" && pwd)
bundle=$work/bundle

fail() {
  echo "FAIL ($case_name): $*"
  exit 1
}

# expect_refusal DAMAGE EXPECTED: a copy of the bundle with DAMAGE applied (a
# command run in it) stops env/build.sh with exit 2 and a message holding
# EXPECTED, and nothing is configured.
expect_refusal() {
  local damage=$1 expected=$2 copy=$work/$case_name
  rm -rf "$copy"
  cp -a "$bundle" "$copy"
  (cd "$copy" && eval "$damage") || fail "could not damage the copy: $damage"
  local out status
  out=$(TANDEM_BUILD=$work/$case_name-build "$repo/env/build.sh" --bundle "$copy" 2>&1)
  status=$?
  echo "$out"
  [ $status -eq 2 ] || fail "exit status $status, expected 2"
  grep -qF -- "$expected" <<<"$out" || fail "the message does not say '$expected'"
  [ ! -e "$work/$case_name-build" ] || fail "a build folder was made for a bad bundle"
  rm -rf "$copy"
  echo "PASS ($case_name)"
}

[ "$case_name" = make ] || [ "$case_name" = runtime ] || [ -f "$bundle/MANIFEST" ] || fail "no bundle in $bundle (the 'make' case makes it)"

case $case_name in
  make)
    rm -rf "$bundle"
    "$repo/env/bundle.sh" "$bundle" --with-tests || fail "env/bundle.sh failed"
    grep -qx '# tests GoogleTest, zlib, libxlsxwriter' "$bundle/MANIFEST" || fail "MANIFEST does not say it has the tests'"
    du -sh "$bundle"
    echo "PASS ($case_name)"
    ;;
  runtime)
    bundle=$work/runtime-bundle
    rm -rf "$bundle" "$work/no-tests-bin" && mkdir -p "$work/no-tests-bin"
    cat >"$work/no-tests-bin/dpkg-query" <<'SH'
#!/bin/bash
# The tests' packages, as a machine without them answers for them.
for a in "$@"; do
  case $a in libgtest-dev | zlib1g-dev | libxlsxwriter-dev | libxlsxwriter4)
    [[ " $* " == *" -W "* ]] && { echo "dpkg-query: no packages found matching $a" >&2; exit 1; } ;;
  esac
done
exec /usr/bin/dpkg-query "$@"
SH
    chmod +x "$work/no-tests-bin/dpkg-query"
    PATH=$work/no-tests-bin:$PATH "$repo/env/bundle.sh" "$bundle" --no-install || fail "env/bundle.sh failed"
    grep -qx '# tests none' "$bundle/MANIFEST" || fail "MANIFEST does not say '# tests none'"
    ! grep -qE 'include/gtest/|xlsxwriter' "$bundle/MANIFEST" || fail "the bundle holds the tests' packages"
    (source "$repo/env/bundle_env.sh" && tandem_bundle_check "$bundle" && ! tandem_bundle_has_tests "$bundle") ||
      fail "the runtime bundle is refused, or said to have the tests'"
    rm -rf "$bundle"
    echo "PASS ($case_name)"
    ;;
  bad-missing) expect_refusal 'rm root/usr/include/hdf5/serial/H5public.h' \
    'root/usr/include/hdf5/serial/H5public.h is missing' ;;
  bad-checksum) expect_refusal 'echo "#define X 1" >>root/usr/include/pcre2.h' \
    'root/usr/include/pcre2.h differs from its MANIFEST' ;;
  bad-extra) expect_refusal 'touch root/usr/include/stray.h' \
    'root/usr/include/stray.h is not in its MANIFEST' ;;
  bad-arch) expect_refusal "sed -i 's/^# arch [^ ]*/# arch riscv64/' MANIFEST" \
    "made for riscv64 and this machine is $(uname -m)" ;;
  bad-lacks) expect_refusal 'rm root/usr/include/CLI/CLI.hpp && grep -v "CLI/CLI.hpp$" MANIFEST >M && mv M MANIFEST' \
    'lacks CLI11' ;;
  bad-folder)
    folder=$work/system-build
    rm -rf "$folder" && mkdir -p "$folder"
    printf 'CMAKE_BUILD_TYPE:STRING=Release\nTANDEM_BUNDLE:PATH=\n' >"$folder/CMakeCache.txt"
    cp "$folder/CMakeCache.txt" "$work/cache-before"
    out=$(TANDEM_BUILD=$folder "$repo/env/build.sh" --bundle "$bundle" 2>&1)
    status=$?
    echo "$out"
    [ $status -eq 2 ] || fail "exit status $status, expected 2"
    grep -qF "$folder was configured with this machine's libraries" <<<"$out" || fail "the message does not name the folder"
    cmp -s "$folder/CMakeCache.txt" "$work/cache-before" || fail "the folder's cache was changed"
    rm -rf "$folder" "$work/cache-before"
    echo "PASS ($case_name)"
    ;;
  kaggle-bad)
    copy=$work/kaggle-bad
    rm -rf "$copy" && cp -a "$bundle" "$copy" && rm "$copy/gpt2/gpt2.tiktoken"
    out=$(TANDEM_BUILD=$work/kaggle-bad-build PATH=/nonexistent-apt:$PATH bash "$repo/kaggle/run.sh" \
      --bundle "$copy" summarize jobs/summarize-tiny.toml 2>&1)
    status=$?
    echo "$out"
    [ $status -eq 2 ] || fail "exit status $status, expected 2"
    grep -qF 'gpt2/gpt2.tiktoken is missing' <<<"$out" || fail "the message does not name the missing file"
    [ ! -e "$work/kaggle-bad-build" ] || fail "run.sh configured a build with a bad bundle"
    rm -rf "$copy"
    echo "PASS ($case_name)"
    ;;
  kaggle-run)
    [ -x "$work/build/apps/summarize" ] || fail "no $work/build/apps/summarize (the 'build' case makes it)"
    unshare -n true 2>/dev/null || { echo "SKIP: unshare -n is not allowed here"; exit 77; }
    rm -rf "$work/kaggle-run"
    # Loopback only, as Open MPI needs it.
    out=$(TANDEM_BUILD=$work/build unshare -n bash -c 'ip link set lo up && exec bash "$0" "$@"' \
      "$repo/kaggle/run.sh" --bundle "$bundle" summarize \
      jobs/summarize-tiny.toml --set train.max_steps=5 --set train.warmup_steps=1 --set gen.max_new_tokens=8 \
      --set train.out_dir="$work/kaggle-run" --set data.cache_dir="$work/kaggle-token-cache" 2>&1)
    status=$?
    echo "$out"
    [ $status -eq 0 ] || fail "exit status $status"
    # Open MPI's flag for root: run.sh adds it only as root.
    root=
    [ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "
    for want in "command: $bundle/bin/mpirun ${root}-np 1 " "done: 5 steps" "kaggle/run.sh: done"; do
      grep -qF -- "$want" <<<"$out" || fail "the output lacks '$want'"
    done
    ! grep -qE 'apt-get|installing|configuring|building summarize' <<<"$out" || fail "run.sh installed or built something"
    [ -f "$work/kaggle-run/submission.csv" ] || fail "no submission.csv"
    echo "PASS ($case_name)"
    ;;
  build)
    unshare -n -m true 2>/dev/null || { echo "SKIP: unshare -n -m is not allowed here"; exit 77; }
    src=$work/src
    rm -rf "$src" "$work/build" "$work/run" "$work/token-cache"
    mkdir -p "$src"
    # A fresh copy: what git tracks or would track, no build folder, no caches.
    git -C "$repo" ls-files -co --exclude-standard -z | (cd "$repo" && tar --null -T - -cf -) | tar -C "$src" -xf -
    exec unshare -n -m "$repo/tests/offline/offline_build.sh" "$src" "$bundle" "$work"
    ;;
  *) fail "unknown case" ;;
esac
