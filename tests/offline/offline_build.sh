#!/bin/bash
# Runs inside `unshare -n -m` (tests/offline/offline_test.sh build): hides this
# machine's copies of what the bundle holds, then builds SRC with only the
# bundle, checks what the programs load, and runs them through the bundle.
#   offline_build.sh SRC BUNDLE WORK
set -uo pipefail
src=$1 bundle=$2 work=$3
fail() {
  echo "FAIL (build): $*"
  exit 1
}
ip link set lo up || fail "cannot bring up loopback in the namespace"  # Open MPI's daemons talk over it
if getent hosts pypi.org >/dev/null 2>&1 && timeout 5 bash -c 'exec 3<>/dev/tcp/pypi.org/443' 2>/dev/null; then
  fail "the namespace reaches the network"
fi

# What the toolchain itself loads stays visible: the target has its own
# compiler, CMake and Python, with whatever libraries they come with.
source "$src/env/python.sh"
tools=()
for t in cmake ninja make ccache gcc g++ as ld ld.bfd git tar bash sed grep find sort file ip sha256sum awk \
  "$(g++ -print-prog-name=cc1plus)" "$(gcc -print-prog-name=cc1)" "$(g++ -print-prog-name=collect2)" \
  "$(g++ -print-prog-name=lto1)" "$(readlink -f "$(command -v "$TANDEM_PYTHON")")"; do
  p=$(command -v "$t" 2>/dev/null || echo "$t")
  [ -x "$p" ] && tools+=("$p")
done
dynload=$("$TANDEM_PYTHON" -c 'import sysconfig; print(sysconfig.get_path("platstdlib"))')/lib-dynload
keep=$({ ldd "${tools[@]}" "$dynload"/*.so 2>/dev/null; } | awk '/=> \//{print $3}' | xargs -r readlink -f | sort -u)

multiarch=$(sed -n 's/^# arch [^ ]* //p' "$bundle/MANIFEST")
masked=0
while IFS= read -r rel; do
  sys=/${rel#root/}
  [ -f "$sys" ] && [ ! -L "$sys" ] || continue
  grep -qxF "$(readlink -f "$sys")" <<<"$keep" && continue
  mount --bind /dev/null "$sys" || fail "cannot hide $sys"
  masked=$((masked + 1))
done < <(grep -v '^#' "$bundle/MANIFEST" | cut -f4 | grep '^root/')
# Header folders: the whole of each (all of Boost, not only what CRC needs).
for d in $(grep -v '^#' "$bundle/MANIFEST" | cut -f4 | sed -n 's#^root/usr/include/\([^/]*\)/.*#\1#p' | sort -u); do
  [ "$d" = "$multiarch" ] && continue
  [ -d "/usr/include/$d" ] && mount -t tmpfs -o size=1m,ro none "/usr/include/$d"
done
echo "hidden: $masked files of this machine's, and its header folders of $(grep -v '^#' "$bundle/MANIFEST" |
  cut -f4 | sed -n 's#^root/usr/include/\([^/]*\)/.*#\1#p' | sort -u | grep -vx "$multiarch" | paste -sd' ')"
command -v mpirun >/dev/null && mpirun --version >/dev/null 2>&1 && fail "the machine's own mpirun still runs"

# The bundle's question is where every header and library comes from, not
# the code the compiler makes: each target compiled as one unit without
# optimisation answers it in a fraction of a release build's time (measured
# in docs/building.md), the one compile of the suite that the checkout's
# ccache cannot serve (the bundle's headers lie at other paths). With a unit
# a target, the precompiled header costs more than it saves: every unit
# loads it, LibTorch-free or not (62 s against 75 s, 115 CPU-s against 122).
started=$(date +%s)
TANDEM_BUILD=$work/build "$src/env/build.sh" --bundle "$bundle" --target summarize --target envcheck \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON \
  > >(tee "$work/build.log") 2>&1 || fail "env/build.sh --bundle failed (log: $work/build.log)"
echo "offline build: $(($(date +%s) - started)) s"
grep -q "libraries  from the offline bundle $bundle" "$work/build.log" ||
  fail "the configure summary does not name the bundle as the libraries' source"

# Every library resolves to the bundle, torch's site-packages, or the C and
# C++ runtime.
site=$("$TANDEM_PYTHON" -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
runtime='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libgomp)\.so'
for prog in "$work/build/apps/summarize" "$work/build/apps/envcheck"; do
  while read -r name _ path _; do
    case $path in
      "$bundle"/* | "$site"/*) ;;
      not) fail "$(basename "$prog"): $name not found" ;;
      *) [[ $name =~ $runtime ]] || fail "$(basename "$prog"): $name resolves to $path, outside the bundle and torch" ;;
    esac
  done < <("$bundle/bin/bundle-run" ldd "$prog" | grep '=>')
done
echo "ldd: every library of summarize and envcheck is the bundle's, torch's or the C/C++ runtime's"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# GPT-2's vocabulary from the bundle, not from this machine's cache.
unset TANDEM_TOKENIZER_DIR
export XDG_CACHE_HOME=$work/empty-cache
"$bundle/bin/mpirun" -np 2 "$work/build/apps/envcheck" --test 2>&1 | tee "$work/run.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "envcheck --test on 2 ranks failed"
"$bundle/bin/mpirun" -np 2 "$work/build/apps/summarize" train --config "$src/jobs/summarize-tiny.toml" \
  --set train.max_steps=3 --set train.warmup_steps=1 --set train.out_dir="$work/run" \
  --set data.cache_dir="$work/token-cache" 2>&1 | tee -a "$work/run.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "the 2-rank summarize run failed"
# Open MPI skips a plugin it cannot load with a note; none may be the bundle's fault.
! grep -E "unable to open|file too short|cannot open shared object" "$work/run.log" ||
  fail "a library or plugin did not load from the bundle"
[ -f "$work/run/models/final_model.h5" ] || fail "the run wrote no models/final_model.h5"
# The tests configure from the bundle too (env/gpu-check.sh builds the GPU
# ones with it); configuring is enough here, building them would double the time.
cmake -S "$src" -B "$work/build" -DBUILD_TESTING=ON >"$work/tests-configure.log" 2>&1 ||
  fail "configuring the tests with the bundle failed (log: $work/tests-configure.log)"
echo "PASS (build)"
