# Sourced. tandem_bundle_check DIR [WHO] checks an offline bundle made by
# env/bundle.sh before a build or a run uses it, and stops the calling script
# with exit status 2 and a message naming what is wrong:
#   - no MANIFEST, or one env/bundle.sh did not write;
#   - made for another CPU architecture, or on a system whose C library is
#     newer than this one's (its programs would not load here);
#   - a file whose sha256 (or link target) differs from the MANIFEST's, a file
#     the MANIFEST lists that is missing, or a file it does not list;
#   - a library the build needs that the bundle lacks.
# WHO prefixes the messages (default: tandem). Quiet when the bundle is good.

# "NAME|extended regex on MANIFEST paths": what a build and a run need.
tandem_bundle_required=(
  "Open MPI (mpirun)|^root/usr/bin/orterun$"
  "Open MPI (mpi.h)|^root/usr/lib/[^/]+/openmpi/include/mpi\.h$"
  "Open MPI (libmpi)|^root/usr/lib/[^/]+/libmpi\.so\.[0-9]+$"
  "HDF5 (hdf5.h)|^root/usr/include/hdf5/serial/hdf5\.h$"
  "HDF5 (libhdf5)|^root/usr/lib/[^/]+/hdf5/serial/libhdf5\.so$"
  "PCRE2|^root/usr/include/pcre2\.h$"
  "liborcus|/pkgconfig/liborcus-0\.17\.pc$"
  "TOML++|/toml\+\+/toml\.h(pp)?$"
  "CLI11|/CLI/CLI\.hpp$"
  "nlohmann-json|/nlohmann/json\.hpp$"
  "stb|^root/usr/include/stb/stb_image\.h$"
  "Boost.CRC|^root/usr/include/boost/crc\.hpp$"
  "pkg-config|^root/usr/bin/pkg"
  "GPT-2's tokenizer|^gpt2/gpt2\.tiktoken$"
  "the launcher|^bin/bundle-run$"
)

tandem_bundle_check() {
  local b=$1 who=${2:-tandem} m arch glibc here_glibc bad_line listed need name re sum path
  _tb_bad() { echo "$who: bundle $b: $*" >&2; exit 2; }
  [ -d "$b" ] || _tb_bad "no such folder"
  m=$b/MANIFEST
  [ -f "$m" ] || _tb_bad "has no MANIFEST: not a bundle env/bundle.sh made"
  [ "$(head -n 1 "$m")" = "# tandem offline bundle" ] || _tb_bad "MANIFEST does not start with '# tandem offline bundle'"
  arch=$(sed -n 's/^# arch \([^ ]*\) .*/\1/p' "$m")
  [ "$arch" = "$(uname -m)" ] ||
    _tb_bad "made for ${arch:-an unknown CPU} and this machine is $(uname -m): make it on a machine like this one"
  glibc=$(sed -n 's/^# glibc //p' "$m")
  here_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$here_glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" "$here_glibc" | sort -V | tail -n 1)" != "$here_glibc" ]; then
    _tb_bad "made on a system with glibc $glibc and this one has $here_glibc: its libraries would not load; make it on a machine like this one"
  fi
  # Contents: every listed file as listed, and nothing else.
  bad_line=$(cd "$b" && grep -v '^#' MANIFEST | awk -F'\t' '$1 !~ /^link:/ {print $1 "  " $4}' |
    sha256sum --quiet -c - 2>/dev/null | head -n 1 || true)
  case $bad_line in
    "") ;;
    *"open or read") _tb_bad "${bad_line%%: *} is missing (its MANIFEST lists it): copy the bundle again" ;;
    *) _tb_bad "${bad_line%%: *} differs from its MANIFEST (sha256): copy the bundle again" ;;
  esac
  while IFS=$'\t' read -r sum _ _ path; do
    [ "$(readlink "$b/$path")" = "${sum#link:}" ] ||
      _tb_bad "$path is not the link its MANIFEST lists (to ${sum#link:}): copy the bundle again"
  done < <(grep '^link:' "$m")
  listed=$(grep -v '^#' "$m" | cut -f4 | sort)
  need=$(comm -13 <(echo "$listed") <(cd "$b" && find root bin gpt2 programs \( -type f -o -type l \) 2>/dev/null | sort) | head -n 1)
  [ -z "$need" ] || _tb_bad "$need is not in its MANIFEST: copy the bundle again"
  for need in "${tandem_bundle_required[@]}"; do
    name=${need%%|*} re=${need#*|}
    grep -qE "$re" <<<"$listed" ||
      _tb_bad "lacks $name, which tandem needs: make it again with env/bundle.sh"
  done
  unset -f _tb_bad
}

# tandem_bundle_has_tests DIR: whether the bundle holds what the tests build
# with (env/bundle.sh --with-tests); bundles made before the header line
# existed always did.
tandem_bundle_has_tests() { ! grep -qx '# tests none' "$1/MANIFEST"; }

# tandem_bundle_torch DIR: the torch version the bundle's programs were built
# for, empty when it has none (made without --with-build).
tandem_bundle_torch() { sed -n 's/^# programs for torch //p' "$1/MANIFEST"; }
