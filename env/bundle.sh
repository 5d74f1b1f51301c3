#!/usr/bin/env bash
# Makes the offline bundle: one folder that lets a machine with no network and
# no root (a Kaggle notebook with Internet off, a cluster's GPU node) build and
# run tandem with only its own compiler, CMake and Python torch.
#
#   env/bundle.sh DIR                make it (on a machine with a network,
#                                    ideally one like the target)
#   env/bundle.sh DIR --with-build   also the built programs of build/ (or
#                                    $TANDEM_BUILD), for a target whose torch is
#                                    the same version
#   env/bundle.sh DIR --with-tests   also what the tests build with (GoogleTest,
#                                    zlib's headers, libxlsxwriter), which
#                                    env/gpu-check.sh --bundle needs; without
#                                    it those packages are neither needed nor
#                                    taken (kaggle/run.sh --make-bundle), and
#                                    MANIFEST says "# tests none"
#   env/bundle.sh DIR --archive      also DIR.tar.gz, the bundle as one file
#                                    (what to upload as a Kaggle dataset:
#                                    uploads lose links and execute bits;
#                                    kaggle/run.sh --bundle takes either)
#   env/bundle.sh DIR --no-install   stop (exit 2) when a package is missing,
#                                    where env/setup.sh would install it
#                                    (kaggle/run.sh --make-bundle installs first)
#
# What goes in, from this machine's Debian or Ubuntu packages (installed first
# by env/setup.sh when missing), unpacked under DIR/root as they lie in /:
#   - Open MPI with its plugins, help files and PMIx (found again through
#     OPAL_PREFIX and PMIX_INSTALL_PREFIX), HDF5 (C, serial), PCRE2, liborcus,
#     TOML++, CLI11, nlohmann-json, stb's headers, the Boost headers that
#     boost/crc.hpp includes, pkgconf, and with --with-tests GoogleTest,
#     zlib's headers and libxlsxwriter. Not gnuplot: its image libraries
#     (libgd, libheif and five video codecs) would double the bundle, so
#     offline runs skip the figures, as they say when they do;
#   - every shared library those need, down to the C and C++ runtime
#     (libc, libstdc++, libgcc_s, libgomp), which every target has;
# plus GPT-2's gpt2.tiktoken, and MANIFEST: each file's sha256 (a link's
# target), package, version, path and mode, after a header naming the
# machine it was made for; a copy that lost its links or modes is restored
# from it (env/bundle_env.sh, tandem_bundle_open). A library the
# archive lacks (toml++ on Ubuntu 22.04) is taken from the tree kaggle/run.sh
# installs it into, $TANDEM_DEPS/NAME. Documentation, static libraries and
# Fortran, Java and C++ bindings stay out.
#
# env/bundle_env.sh checks a bundle and points the build and the programs at
# it; env/build.sh --bundle DIR and kaggle/run.sh --bundle DIR use it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

die() { echo "env/bundle.sh: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: env/bundle.sh DIR [--with-build] [--with-tests] [--archive] [--no-install]"
out=$1
shift
with_build=0 with_tests=0 archive=0 install=1
for a in "$@"; do
  case $a in
    --with-build) with_build=1 ;;
    --with-tests) with_tests=1 ;;
    --archive) archive=1 ;;
    --no-install) install=0 ;;
    *) die "unknown option '$a' (have: --with-build, --with-tests, --archive, --no-install)" ;;
  esac
done
command -v dpkg-query >/dev/null || die "this machine has no dpkg: a bundle is made on Debian or Ubuntu"
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  die "$out exists and is not empty: give a new folder (nothing was written)"
fi
if [ $archive -eq 1 ] && [ -e "${out%/}.tar.gz" ]; then
  die "${out%/}.tar.gz exists: give a new folder, or move it away (nothing was written)"
fi

# package: which of its files (an extended regex on the path, which alone
# decides; "" = all but the usual exclusions below). The runtime packages of these libraries come in
# through the shared-library closure further down.
declare -A wanted=(
  [openmpi-bin]='/usr/bin/(orterun|orted|ompi_info|opal_wrapper|mpicc\.openmpi)$'
  [openmpi-common]=''
  [libopenmpi3]=''
  [libopenmpi-dev]='/openmpi/include/[^/]+\.h$|/openmpi/include/openmpi/mpiext/|/openmpi/lib/libmpi\.so$'
  [libpmix2]=''
  [libhdf5-103-1]='libhdf5_serial\.so'
  [libhdf5-dev]='/include/hdf5/serial/[^/]+\.h$|/hdf5/serial/(include|lib|libhdf5\.so)$|libhdf5_serial\.so$'
  [libpcre2-dev]='/include/pcre2\.h$|libpcre2-8\.(so|pc)$'
  [libpcre2-8-0]=''
  [liborcus-0.17-0]=''
  [liborcus-parser-0.17-0]=''
  [liborcus-dev]='/include/liborcus-0\.17/|liborcus-(parser-)?0\.17\.so$|liborcus-0\.17\.pc$'
  [libtomlplusplus3]=''
  [libtomlplusplus-dev]=''
  [libcli11-dev]=''
  [nlohmann-json3-dev]=''
  [libstb-dev]='/include/stb/'
)
# Only the tests (env/gpu-check.sh builds the GPU ones with the bundle):
# with --with-tests.
declare -A test_wanted=(
  [libgtest-dev]='/include/gtest/|libgtest(_main)?\.a$|/cmake/GTest/'
  [zlib1g-dev]='/include/z(lib|conf)\.h$|libz\.so$|zlib\.pc$'
  [libxlsxwriter-dev]=''
  [libxlsxwriter4]=''
)
if [ $with_tests -eq 1 ]; then
  for p in "${!test_wanted[@]}"; do wanted[$p]=${test_wanted[$p]}; done
fi
# Header-only libraries Ubuntu 22.04 lacks: kaggle/run.sh installs them from
# their releases into $TANDEM_DEPS/NAME.
declare -A fallback=([libtomlplusplus-dev]=tomlplusplus [libcli11-dev]=CLI11)
declare -A fallback_runtime=([libtomlplusplus3]=libtomlplusplus-dev)
excluded='/share/(doc|man|info|lintian|bug|locale)/|\.a$|\.mod$|fortran|java|_cxx\.so|oshmem|mca_(atomic|memheap|scoll|spml|sshmem)_|/etc/|valgrind'
# The C and C++ runtime every target has; everything else is bundled.
base_runtime='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libgomp)\.so'

deps=${TANDEM_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem/deps}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${!wanted[@]}"; do
  installed "$p" && continue
  if [ -n "${fallback[$p]:-}" ] && [ -d "$deps/${fallback[$p]}" ]; then continue; fi
  if [ -n "${fallback_runtime[$p]:-}" ] && [ -d "$deps/${fallback[${fallback_runtime[$p]}]}" ]; then continue; fi
  missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ $install -eq 0 ]; then
  die "packages missing here: ${missing[*]} (nothing was written)"
elif [ ${#missing[@]} -gt 0 ]; then
  echo "bundle: installing what is missing (${missing[*]}) with env/setup.sh"
  "$here/setup.sh" >/dev/null
  for p in "${missing[@]}"; do installed "$p" || die "package $p is missing after env/setup.sh"; done
fi
tiktoken_dir=${TANDEM_TOKENIZER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem/gpt2}
"$here/tokenizer.sh" "$tiktoken_dir"

mkdir -p "$out/root"
out=$(cd "$out" && pwd)
multiarch=$(gcc -print-multiarch)
libdir=/usr/lib/$multiarch
manifest=$out/.MANIFEST.part
declare -A owner  # bundled path -> "package<TAB>version"

# add SOURCE PACKAGE VERSION [PATH]: copy one file or symlink into the bundle,
# at PATH under root/ (default: where it lies in /).
add() {
  local path=${4:-$1}
  [ -n "${owner[$path]:-}" ] && return 0
  mkdir -p "$(dirname "$out/root$path")"
  # A link to an absolute path (Debian's alternatives) would point out of the
  # bundle: the file it resolves to is copied in its place.
  local deref=-P
  [ -L "$1" ] && [[ $(readlink "$1") == /* ]] && deref=-L
  cp "$deref" --preserve=mode,timestamps "$1" "$out/root$path"
  owner[$path]="$2	$3"
}

package_of() { # package_of PATH: "package<TAB>version" of the installed file
  local p # usrmerge: a package may list the file under /lib
  p=$(dpkg-query -S "$1" 2>/dev/null | head -n 1 | cut -d: -f1) || true
  [ -n "$p" ] || p=$(dpkg-query -S "${1#/usr}" 2>/dev/null | head -n 1 | cut -d: -f1) || true
  if [ -z "$p" ]; then printf 'unpackaged\tunknown\n'; return; fi
  printf '%s\t%s\n' "$p" "$(dpkg-query -W -f='${Version}' "$p")"
}

for p in "${!wanted[@]}"; do
  if ! installed "$p"; then continue; fi
  version=$(dpkg-query -W -f='${Version}' "$p")
  while IFS= read -r f; do
    [ -f "$f" ] || [ -L "$f" ] || continue
    if [ -n "${wanted[$p]}" ]; then [[ $f =~ ${wanted[$p]} ]] || continue
    elif [[ $f =~ $excluded ]]; then continue; fi
    add "$f" "$p" "$version"
  done < <(dpkg-query -L "$p")
done
# Fallback trees (kaggle/run.sh's release installs), where the package is absent.
for p in "${!fallback[@]}"; do
  installed "$p" && continue
  name=${fallback[$p]}
  [ -d "$deps/$name" ] || continue
  tag=$(cat "$deps/$name/.tandem-release" 2>/dev/null || echo unknown)
  while IFS= read -r f; do
    add "$f" "release:$name" "$tag" "/opt/tandem-deps/$name/${f#"$deps/$name"/}"
  done < <(find "$deps/$name" \( -type f -o -type l \))
done

# pkg-config, whichever program and package give it here (pkgconf-bin on
# Debian 12, pkg-config on Ubuntu 22.04).
pkg_config=$(readlink -f "$(command -v pkg-config)") || die "no pkg-config here: install pkgconf"
IFS=$'\t' read -r pkg ver < <(package_of "$pkg_config")
add "$pkg_config" "$pkg" "$ver"

# Boost.CRC: only the headers boost/crc.hpp includes, not Boost's 150 MB.
boost_version=$(dpkg-query -W -f='${Version}' libboost1.74-dev 2>/dev/null || echo unknown)
while IFS= read -r h; do
  case $h in /usr/include/boost/*) add "$h" libboost-dev "$boost_version" ;; esac
done < <(echo '#include <boost/crc.hpp>' | g++ -x c++ -M - | tr ' \\' '\n\n' | grep '^/')

# Every shared library the bundled programs and libraries load, to a fixed
# point; ldd follows what is already bundled first.
lib_dirs() { find "$out/root" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:; }
changed=1
while [ $changed -eq 1 ]; do
  changed=0
  ld_path=$(lib_dirs)
  while IFS= read -r lib; do
    real=$(readlink -f "$lib")
    case $real in /usr/*) ;; *) real=/usr$real ;; esac
    canonical=$libdir/$(basename "$real")
    [ -e "$canonical" ] || canonical=$real
    soname=$libdir/$(basename "$lib")
    [ -n "${owner[$canonical]:-}" ] && [ -n "${owner[$soname]:-}" ] && continue
    IFS=$'\t' read -r pkg ver < <(package_of "$real")
    add "$canonical" "$pkg" "$ver"
    [ -e "$soname" ] && [ "$soname" != "$canonical" ] && add "$soname" "$pkg" "$ver"
    changed=1
  done < <(find "$out/root" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    xargs -0r env LD_LIBRARY_PATH="$ld_path" ldd 2>/dev/null |
    sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p' |
    while read -r name path; do
      [[ $name =~ $base_runtime ]] && continue
      case $path in "$out"/*) continue ;; esac
      echo "$path"
    done | sort -u)
done

# DIR/bin: the commands a target runs, through env/bundle-run.sh, which gives
# them the bundle's libraries and Open MPI's and PMIx's relocated prefixes.
mkdir -p "$out/bin"
cp "$here/bundle-run.sh" "$out/bin/bundle-run"
for l in mpirun mpiexec mpicc ompi_info pkg-config; do ln -s bundle-run "$out/bin/$l"; done

mkdir -p "$out/gpt2"
cp "$tiktoken_dir/gpt2.tiktoken" "$out/gpt2/"
if [ $with_build -eq 1 ]; then
  build=${TANDEM_BUILD:-$repo/build}
  mkdir -p "$out/programs"
  # tandem-h5walk guards the programs' first reading of HDF5 files.
  # The apps as apps/CMakeLists.txt declares them (env/launch_lib.sh), rouge
  # and tandem-plot beside them.
  for prog in $(source "$here/launch_lib.sh" && launch_app_names | sed 's#^#apps/#') apps/rouge apps/tandem-plot \
    libcore/tandem-h5walk; do
    [ -x "$build/$prog" ] || die "--with-build: $build/$prog is not built (run env/build.sh first)"
    cp "$build/$prog" "$out/programs/"
  done
fi

dangling=$(find "$out" -xtype l -o -lname '/*' | head -n 1)
[ -z "$dangling" ] || die "${dangling#"$out"/} points to a file the bundle lacks: a package is missing from env/bundle.sh's list"

# MANIFEST: a header, then one line per file: sha256 (or link:TARGET),
# package, version, path relative to DIR, and mode (octal; "-" for a link).
source "$here/python.sh"
sum_of() { if [ -L "$1" ]; then echo "link:$(readlink "$1")"; else sha256sum "$1" | cut -d' ' -f1; fi; }
mode_of() { if [ -L "$1" ]; then echo -; else stat -c %a "$1"; fi; }
{
  echo "# tandem offline bundle"
  echo "# arch $(uname -m) $multiarch"
  echo "# glibc $(getconf GNU_LIBC_VERSION | awk '{print $2}')"
  echo "# system $(. /etc/os-release && echo "$ID $VERSION_ID")"
  echo "# pkg-config root$pkg_config"
  echo "# libdirs $(cd "$out" && find root -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)"
  echo "# made $(date -u +%Y-%m-%dT%H:%M:%SZ) from tandem $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if [ $with_tests -eq 1 ]; then echo "# tests GoogleTest, zlib, libxlsxwriter"; else echo "# tests none"; fi
  if [ $with_build -eq 1 ]; then
    echo "# programs for torch $("$TANDEM_PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || python3 -c 'import torch; print(torch.__version__)')"
  fi
  (
    cd "$out"
    for path in "${!owner[@]}"; do
      rel=root$path
      printf '%s\t%s\t%s\t%s\n' "$(sum_of "$rel")" "${owner[$path]}" "$rel" "$(mode_of "$rel")"
    done
    for rel in gpt2/gpt2.tiktoken bin/* $( [ $with_build -eq 1 ] && ls -d programs/*); do
      printf '%s\ttandem-bundle\t1\t%s\t%s\n' "$(sum_of "$rel")" "$rel" "$(mode_of "$rel")"
    done
  ) | sort -t$'\t' -k4,4
} >"$manifest"
mv "$manifest" "$out/MANIFEST"
size=$(du -sb --exclude=programs "$out" | cut -f1)
echo "bundle: $out: $(grep -vc '^#' "$out/MANIFEST") files, $((size / 1000000)) MB without programs"
if [ $archive -eq 1 ]; then
  tar -C "$(dirname "$out")" -czf "$out.tar.gz.part" "$(basename "$out")"
  mv "$out.tar.gz.part" "$out.tar.gz"
  echo "bundle: $out.tar.gz: $(($(stat -c %s "$out.tar.gz") / 1000000)) MB"
fi
