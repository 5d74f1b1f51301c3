#!/bin/bash
# The offline bundle (env/bundle.sh), as faithfully as one machine allows.
#
#   tests/offline/offline_test.sh CASE REPO WORK
#     make          env/bundle.sh WORK/bundle --with-tests --archive (the
#                   fixture the others use: the folder and WORK/bundle.tar.gz);
#                   its size and file count go to the log
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
#     kaggle-dataset  the same run with the bundle as a Kaggle dataset gives
#                   it: read-only (a read-only bind mount: write permissions
#                   do not bind root), its links replaced by copies or gone,
#                   no execute bits; then as the archive, read-only too. Each
#                   is copied or unpacked once to local disk, restored from
#                   its MANIFEST and checked; a second call reuses the copy
#     dataset-bad   real damage in those forms (a changed file in the
#                   link-less copy, a missing one in an archive): exit 2, the
#                   file and the given bundle named, no local copy kept
#     archive-crafted  archives with an absolute entry, a '..', a link
#                   pointing out of the bundle (relative or absolute), a FIFO,
#                   or no gzip at all: exit 2 naming the entry, nothing unpacked
#                   (needs no bundle)
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

# dataset_form SRC DEST: SRC as an upload to Kaggle leaves it: a link to a
# file becomes a copy of it, a link to a folder is skipped, bin/mpiexec is
# gone, no file is executable.
dataset_form() {
  local l
  rm -rf "$2"
  cp -a "$1" "$2" || fail "could not copy $1"
  while IFS= read -r -d '' l; do
    if [ -d "$l" ]; then rm "$l"; else cp --remove-destination "$(readlink -f "$l")" "$l"; fi
  done < <(find "$2" -type l -print0)
  rm -f "$2/bin/mpiexec"
  find "$2" -type f -exec chmod a-x {} +
  [ -z "$(find "$2" -type l)" ] || fail "links are left in $2"
}

# in_sandbox RO_DIR COMMAND...: COMMAND with no network but loopback (as
# Open MPI needs) and RO_DIR mounted read-only.
in_sandbox() {
  local ro=$1
  shift
  unshare -n -m bash -c 'ip link set lo up && mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" &&
    exec "$@"' "$ro" "$@"
}

# kaggle_run RO_DIR BUNDLE_ARG OUT: kaggle/run.sh --bundle BUNDLE_ARG in the
# sandbox, a 5-step summarize run writing OUT with the build 'build' made;
# prints its output.
kaggle_run() {
  in_sandbox "$1" env TANDEM_BUILD="$work/build" bash "$repo/kaggle/run.sh" --bundle "$2" summarize \
    jobs/summarize-tiny.toml --set train.max_steps=5 --set train.warmup_steps=1 --set gen.max_new_tokens=8 \
    --set train.out_dir="$3" --set data.cache_dir="$work/kaggle-token-cache" 2>&1
}

# expect_ran STATUS OUTPUT MPIRUN OUT: the run finished through the bundle's
# MPIRUN, installing and building nothing, and wrote its submission.
expect_ran() {
  [ "$1" -eq 0 ] || fail "exit status $1"
  local root=  # Open MPI's flag for root: run.sh adds it only as root.
  [ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "
  for want in "command: $3 ${root}-np 1 " "done: 5 steps" "kaggle/run.sh: done"; do
    grep -qF -- "$want" <<<"$2" || fail "the output lacks '$want'"
  done
  ! grep -qE 'apt-get|installing|configuring|building summarize' <<<"$2" || fail "run.sh installed or built something"
  [ -f "$4/submission.csv" ] || fail "no submission.csv"
}

# expect_bad OUTPUT STATUS TEXT...: exit 2 and every TEXT in the message.
expect_bad() {
  local out=$1 status=$2 t
  shift 2
  echo "$out"
  [ "$status" -eq 2 ] || fail "exit status $status, expected 2"
  for t in "$@"; do grep -qF -- "$t" <<<"$out" || fail "the message does not say '$t'"; done
}

case $case_name in make | runtime | archive-crafted) ;; *)
  [ -f "$bundle/MANIFEST" ] || fail "no bundle in $bundle (the 'make' case makes it)" ;;
esac

case $case_name in
  make)
    rm -rf "$bundle"
    rm -f "$bundle.tar.gz"
    "$repo/env/bundle.sh" "$bundle" --with-tests --archive || fail "env/bundle.sh failed"
    grep -qx '# tests GoogleTest, zlib, libxlsxwriter' "$bundle/MANIFEST" || fail "MANIFEST does not say it has the tests'"
    [ "$(tar -tzf "$bundle.tar.gz" | grep -c '^bundle/MANIFEST$')" -eq 1 ] || fail "bundle.tar.gz does not hold bundle/MANIFEST"
    du -sh "$bundle" "$bundle.tar.gz"
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
  bad-lacks) expect_refusal 'rm root/usr/include/CLI/CLI.hpp &&
    awk -F"\t" "\$4 != \"root/usr/include/CLI/CLI.hpp\"" MANIFEST >M && mv M MANIFEST' \
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
    unshare -n -m true 2>/dev/null || { echo "SKIP: unshare -n -m is not allowed here"; exit 77; }
    rm -rf "$work/kaggle-run"
    out=$(kaggle_run "$bundle" "$bundle" "$work/kaggle-run")
    status=$?
    echo "$out"
    expect_ran $status "$out" "$bundle/bin/mpirun" "$work/kaggle-run"
    echo "PASS ($case_name)"
    ;;
  kaggle-dataset)
    [ -x "$work/build/apps/summarize" ] || fail "no $work/build/apps/summarize (the 'build' case makes it)"
    unshare -n -m true 2>/dev/null || { echo "SKIP: unshare -n -m is not allowed here"; exit 77; }
    input=$work/kaggle-input
    unpack=$work/kaggle-unpack
    rm -rf "$input" "$unpack" "$work"/kaggle-dataset-*
    mkdir -p "$input"
    dataset_form "$bundle" "$input/tandem-bundle"
    cp "$bundle.tar.gz" "$input/"
    for form in tandem-bundle bundle.tar.gz; do
      out=$(TANDEM_BUNDLE_UNPACK=$unpack kaggle_run "$input" "$input/$form" "$work/kaggle-dataset-$form")
      status=$?
      echo "$out"
      local_copy=$(awk '/copying it to |unpacking the bundle / {print $NF}' <<<"$out")
      [[ $local_copy == "$unpack"/tandem-bundle-* ]] || fail "$form: no local copy under $unpack named in the output"
      expect_ran $status "$out" "$local_copy/bin/mpirun" "$work/kaggle-dataset-$form"
      [ -L "$local_copy/bin/mpiexec" ] && [ -x "$local_copy/root/usr/bin/orterun" ] ||
        fail "$form: the local copy's links or modes were not restored"
      # Again: the local copy is reused, not made again.
      again=$(TANDEM_BUNDLE_UNPACK=$unpack TANDEM_BUILD=$work/build bash "$repo/kaggle/run.sh" --dry-run \
        --bundle "$input/$form" summarize 2>&1) || fail "$form: the second call failed: $again"
      ! grep -qE 'copying it to|unpacking' <<<"$again" || fail "$form: the second call copied the bundle again"
      grep -qF "command: $local_copy/bin/mpirun" <<<"$again" || fail "$form: the second call does not use $local_copy"
    done
    [ "$(ls "$unpack" | wc -l)" -eq 2 ] || fail "expected two local copies in $unpack: $(ls "$unpack")"
    rm -rf "$input" "$unpack" "$work"/kaggle-dataset-*
    echo "PASS ($case_name)"
    ;;
  dataset-bad)
    unpack=$work/bad-unpack
    rm -rf "$unpack" "$work/bad-dataset" "$work/bad-archive"
    dataset_form "$bundle" "$work/bad-dataset"
    chmod u+w "$work/bad-dataset/root/usr/include/pcre2.h"
    echo "#define X 1" >>"$work/bad-dataset/root/usr/include/pcre2.h"
    out=$(TANDEM_BUNDLE_UNPACK=$unpack bash "$repo/kaggle/run.sh" --dry-run --bundle "$work/bad-dataset" summarize 2>&1)
    expect_bad "$out" $? "bundle $work/bad-dataset: root/usr/include/pcre2.h differs from its MANIFEST"
    cp -a "$bundle" "$work/bad-archive"
    rm "$work/bad-archive/root/usr/include/CLI/CLI.hpp"
    tar -C "$work" -czf "$work/bad-archive.tar.gz" bad-archive
    out=$(TANDEM_BUNDLE_UNPACK=$unpack bash "$repo/env/build.sh" --bundle "$work/bad-archive.tar.gz" 2>&1)
    expect_bad "$out" $? "bundle $work/bad-archive.tar.gz: root/usr/include/CLI/CLI.hpp is missing"
    [ -z "$(ls -A "$unpack")" ] || fail "a local copy was kept: $(ls "$unpack")"
    rm -rf "$unpack" "$work/bad-dataset" "$work/bad-archive" "$work/bad-archive.tar.gz"
    echo "PASS ($case_name)"
    ;;
  archive-crafted)
    crafted=$work/crafted
    unpack=$crafted/unpack
    rm -rf "$crafted" && mkdir -p "$crafted"
    # NAME ENTRY[:link:TARGET|:fifo]...: a gzip archive of those entries.
    "${TANDEM_PYTHON:-python3}" - "$crafted" <<'PY'
import io, sys, tarfile
cases = {
    "absolute": ["b/MANIFEST", "/etc/cron.d/evil"],
    "dotdot": ["b/MANIFEST", "b/root/../../evil"],
    "link-out": ["b/MANIFEST", "b/root/lib:link:../../../etc"],
    "link-abs": ["b/MANIFEST", "b/bin/mpirun:link:/bin/sh"],
    "fifo": ["b/MANIFEST", "b/bin/pipe:fifo"],
}
for name, entries in cases.items():
    with tarfile.open(f"{sys.argv[1]}/{name}.tar.gz", "w:gz") as t:
        for e in entries:
            path, _, kind = e.partition(":")
            ti = tarfile.TarInfo(path)
            if kind.startswith("link:"):
                ti.type, ti.linkname = tarfile.SYMTYPE, kind[5:]
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            else:
                ti.size = 1
            t.addfile(ti, io.BytesIO(b"x") if ti.size else None)
PY
    echo "not gzip" >"$crafted/plain.tar.gz"
    for c in "absolute:entry '/etc/cron.d/evil' has an absolute path" \
      "dotdot:entry 'b/root/../../evil' has a '..' in its path" \
      "link-out:entry 'b/root/lib' links to '../../../etc', outside the bundle" \
      "link-abs:entry 'b/bin/mpirun' links to the absolute path '/bin/sh'" \
      "fifo:entry 'b/bin/pipe' is not a file, folder or link" \
      "plain:not a readable .tar.gz archive"; do
      name=${c%%:*}
      out=$(TANDEM_BUNDLE_UNPACK=$unpack bash "$repo/kaggle/run.sh" --dry-run --bundle "$crafted/$name.tar.gz" summarize 2>&1)
      expect_bad "$out" $? "$crafted/$name.tar.gz: ${c#*:}" "nothing was unpacked"
      [ -z "$(ls -A "$unpack" 2>/dev/null)" ] || fail "$name: something was written to $unpack: $(ls "$unpack")"
    done
    [ ! -e /etc/cron.d/evil ] && [ ! -e "$crafted/../evil" ] || fail "a crafted entry was written"
    rm -rf "$crafted"
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
