# Sourced. Opens and checks an offline bundle made by env/bundle.sh before a
# build or a run uses it:
#   tandem_bundle_open SRC [WHO]   SRC as given (a folder, a copy that lost
#                                  its links and modes, or FILE.tar.gz) made
#                                  usable and checked; TANDEM_BUNDLE_DIR is
#                                  the folder to use
#   tandem_bundle_check DIR [WHO]  DIR checked as it lies
# Both stop the calling script with exit status 2 and a message naming what
# is wrong:
#   - no MANIFEST, or one env/bundle.sh did not write;
#   - made for another CPU architecture, or on a system whose C library is
#     newer than this one's (its programs would not load here);
#   - a file whose sha256 (or link target) differs from the MANIFEST's, a file
#     the MANIFEST lists that is missing, or a file it does not list;
#   - a library the build needs that the bundle lacks;
#   - a path or link in the MANIFEST or the archive that leads out of the
#     bundle.
# WHO prefixes the messages (default: tandem). Quiet when the bundle is good.

tandem_bundle_env_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

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
  local problem
  problem=$(tandem_bundle_problem "$1") || { echo "${2:-tandem}: bundle ${3:-$1}: $problem" >&2; exit 2; }
}

# tandem_bundle_problem DIR: the first thing wrong with the bundle DIR as it
# lies, printed with status 1; nothing and status 0 when it is whole.
tandem_bundle_problem() (
  b=$1
  bad() { echo "$*"; exit 1; }
  [ -d "$b" ] || bad "no such folder"
  m=$b/MANIFEST
  [ -f "$m" ] || bad "has no MANIFEST: not a bundle env/bundle.sh made"
  [ "$(head -n 1 "$m")" = "# tandem offline bundle" ] || bad "MANIFEST does not start with '# tandem offline bundle'"
  arch=$(sed -n 's/^# arch \([^ ]*\) .*/\1/p' "$m")
  [ "$arch" = "$(uname -m)" ] ||
    bad "made for ${arch:-an unknown CPU} and this machine is $(uname -m): make it on a machine like this one"
  glibc=$(sed -n 's/^# glibc //p' "$m")
  here_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$here_glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" "$here_glibc" | sort -V | tail -n 1)" != "$here_glibc" ]; then
    bad "made on a system with glibc $glibc and this one has $here_glibc: its libraries would not load; make it on a machine like this one"
  fi
  outside=$(_tandem_bundle_outside "$m")
  [ -z "$outside" ] || bad "$outside"
  # Contents: every listed file as listed, and nothing else.
  bad_line=$(cd "$b" && grep -v '^#' MANIFEST | awk -F'\t' '$1 !~ /^link:/ {print $1 "  " $4}' |
    sha256sum --quiet -c - 2>/dev/null | head -n 1 || true)
  case $bad_line in
    "") ;;
    *"open or read") bad "${bad_line%%: *} is missing (its MANIFEST lists it): copy the bundle again" ;;
    *) bad "${bad_line%%: *} differs from its MANIFEST (sha256): copy the bundle again" ;;
  esac
  while IFS=$'\t' read -r sum _ _ path _; do
    [ "$(readlink "$b/$path")" = "${sum#link:}" ] ||
      bad "$path is not the link its MANIFEST lists (to ${sum#link:}): copy the bundle again"
  done < <(grep '^link:' "$m")
  listed=$(grep -v '^#' "$m" | cut -f4 | sort)
  need=$(comm -13 <(echo "$listed") <(cd "$b" && find root bin gpt2 programs \( -type f -o -type l \) 2>/dev/null | sort) | head -n 1)
  [ -z "$need" ] || bad "$need is not in its MANIFEST: copy the bundle again"
  for need in "${tandem_bundle_required[@]}"; do
    name=${need%%|*} re=${need#*|}
    grep -qE "$re" <<<"$listed" || bad "lacks $name, which tandem needs: make it again with env/bundle.sh"
  done
)

# _tandem_bundle_outside MANIFEST: the first listed path or link that leads
# out of the bundle (a MANIFEST is read from untrusted copies too).
_tandem_bundle_outside() {
  grep -v '^#' "$1" | awk -F'\t' '
    function climbs(p,   n, i, a, k) {  # whether p leads above the top
      n = split(p, a, "/"); k = 0
      for (i = 1; i <= n; i++) {
        if (a[i] == "" || a[i] == ".") continue
        if (a[i] == "..") { if (k == 0) return 1; k--; continue }
        k++
      }
      return 0
    }
    $4 !~ /^(root|bin|gpt2|programs)\// || $4 ~ /(^|\/)\.\.(\/|$)/ {
      print $4 " in MANIFEST is not a path inside the bundle"; exit }
    $1 ~ /^link:/ {
      t = substr($1, 6); d = $4; sub(/\/[^\/]*$/, "", d)
      if (t ~ /^\// || climbs(d "/" t)) { print $4 " in MANIFEST links to " t ", outside the bundle"; exit }
    }'
}

# tandem_bundle_open SRC [WHO]: sets TANDEM_BUNDLE_DIR to a folder holding the
# bundle SRC, whole and checked. SRC is
#   - a folder as env/bundle.sh wrote it: used where it lies (read-only is
#     fine);
#   - a copy that lost links or execute bits (a Kaggle dataset's upload
#     replaces links by copies or drops them, and drops modes): copied to
#     local disk, links and modes restored from its MANIFEST;
#   - FILE.tar.gz (env/bundle.sh --archive): every entry checked before
#     anything is written (env/bundle_archive.py), then unpacked to local
#     disk and restored.
# Local disk is $TANDEM_BUNDLE_UNPACK (default ${TMPDIR:-/tmp}), in a folder
# named for the archive's or MANIFEST's checksum, so a later call reuses it
# (checked again). Real damage (a changed checksum, a missing library) is
# reported against SRC with exit status 2, and no local copy is kept.
tandem_bundle_open() {
  local src=$1 who=${2:-tandem} key local_root dest problem
  TANDEM_BUNDLE_DIR=
  if [ -d "$src" ] && [ -z "$(_tandem_bundle_needs_restore "$src")" ]; then
    tandem_bundle_check "$src" "$who"
    TANDEM_BUNDLE_DIR=$(cd "$src" && pwd)
    return
  fi
  if [ -d "$src" ]; then
    key=$(sha256sum <"$src/MANIFEST" | cut -c1-16)
  elif [ -f "$src" ]; then
    case $src in *.tar.gz | *.tgz) ;; *) echo "$who: bundle $src: a file, and not a .tar.gz archive" >&2; exit 2 ;; esac
    key=$(sha256sum <"$src" | cut -c1-16)
  else
    echo "$who: bundle $src: no such folder or archive" >&2
    exit 2
  fi
  local_root=${TANDEM_BUNDLE_UNPACK:-${TMPDIR:-/tmp}}
  dest=$local_root/tandem-bundle-$key
  if problem=$(tandem_bundle_problem "$dest" 2>/dev/null); then
    TANDEM_BUNDLE_DIR=$dest
    return
  fi
  mkdir -p "$local_root" || { echo "$who: cannot write $local_root (TANDEM_BUNDLE_UNPACK)" >&2; exit 2; }
  rm -rf "$dest" "$dest.part"
  if [ -d "$src" ]; then
    echo "$who: bundle $src lost links or execute bits (as a dataset upload does): copying it to $dest" >&2
    cp -R "$src/." "$dest.part" && chmod -R u+w "$dest.part" ||
      { rm -rf "$dest.part"; echo "$who: could not copy $src to $dest.part" >&2; exit 2; }
  else
    echo "$who: checking the entries of $src, then unpacking the bundle to $dest" >&2
    if ! problem=$("${TANDEM_PYTHON:-python3}" "$tandem_bundle_env_dir/bundle_archive.py" "$src" "$dest.part" 2>&1); then
      rm -rf "$dest.part"
      echo "$who: bundle $problem" >&2
      exit 2
    fi
  fi
  if ! problem=$(_tandem_bundle_restore "$dest.part") || ! problem=$(tandem_bundle_problem "$dest.part"); then
    rm -rf "$dest.part"
    echo "$who: bundle $src: $problem" >&2
    exit 2
  fi
  mv "$dest.part" "$dest"
  TANDEM_BUNDLE_DIR=$dest
}

# _tandem_bundle_needs_restore DIR: the first MANIFEST entry that is not a
# link as listed or lacks its execute bit; nothing when DIR is as written.
_tandem_bundle_needs_restore() {
  local b=$1 sum path mode
  [ -f "$b/MANIFEST" ] || return 0
  while IFS=$'\t' read -r sum _ _ path mode; do
    if [[ $sum == link:* ]]; then
      [ -L "$b/$path" ] && [ "$(readlink "$b/$path")" = "${sum#link:}" ] || { echo "$path"; return; }
    elif [[ ${mode:--} =~ ^[0-7]{3,4}$ ]] && ((8#$mode & 8#100)) && [ ! -x "$b/$path" ]; then
      echo "$path"
      return
    fi
  done < <(grep -v '^#' "$b/MANIFEST")
}

# _tandem_bundle_restore DIR: the MANIFEST's links made again and its modes
# set, in a local copy; prints what stops it (status 1).
_tandem_bundle_restore() (
  b=$1
  outside=$(_tandem_bundle_outside "$b/MANIFEST")
  [ -z "$outside" ] || { echo "$outside"; exit 1; }
  awk -F'\t' '!/^#/ && NF >= 5 {f = 1; exit} END {exit !f}' "$b/MANIFEST" ||
    { echo "its MANIFEST records no modes (made before they were): make it again with env/bundle.sh"; exit 1; }
  while IFS=$'\t' read -r sum _ _ path mode; do
    if [[ $sum == link:* ]]; then
      rm -rf "${b:?}/$path" && mkdir -p "$(dirname "$b/$path")" && ln -s "${sum#link:}" "$b/$path" ||
        { echo "could not restore the link $path"; exit 1; }
    elif [ -f "$b/$path" ] && [[ $mode =~ ^[0-7]{3,4}$ ]]; then
      chmod "$mode" "$b/$path"
    fi
  done < <(grep -v '^#' "$b/MANIFEST")
)

# tandem_bundle_has_tests DIR: whether the bundle holds what the tests build
# with (env/bundle.sh --with-tests); bundles made before the header line
# existed always did.
tandem_bundle_has_tests() { ! grep -qx '# tests none' "$1/MANIFEST"; }

# tandem_bundle_torch DIR: the torch version the bundle's programs were built
# for, empty when it has none (made without --with-build).
tandem_bundle_torch() { sed -n 's/^# programs for torch //p' "$1/MANIFEST"; }
