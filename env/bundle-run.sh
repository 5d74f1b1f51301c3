#!/usr/bin/env bash
# An offline bundle's launcher (env/bundle.sh copies it to DIR/bin/bundle-run
# and links mpirun, mpiexec, mpicc, ompi_info and pkg-config to it). Found from
# its own path, so the bundle may lie anywhere: a Kaggle dataset's read-only
# /kaggle/input/NAME, a cluster's shared folder.
#   DIR/bin/mpirun -np 2 build/apps/summarize ...   Open MPI's mpirun
#   DIR/bin/bundle-run COMMAND ARGS...              any command
# The command gets the bundle's libraries (LD_LIBRARY_PATH, which mpirun
# passes on to its ranks), Open MPI's and PMIx's prefixes moved to the bundle
# (OPAL_PREFIX, PMIX_PREFIX), GPT-2's vocabulary (TANDEM_TOKENIZER_DIR, unless
# set), and pkg-config sees only the bundle's .pc files.
set -euo pipefail
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
b=$(dirname "$bin")
multiarch=$(sed -n 's/^# arch [^ ]* //p' "$b/MANIFEST")
libdirs=$(sed -n 's/^# libdirs //p' "$b/MANIFEST")
ld=
IFS=: read -ra dirs <<<"$libdirs"
for d in "${dirs[@]}"; do ld=${ld:+$ld:}$b/$d; done
export LD_LIBRARY_PATH=$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$b/root/usr
export PMIX_PREFIX=$b/root/usr/lib/$multiarch/pmix2
export PKG_CONFIG_LIBDIR=$b/root/usr/lib/$multiarch/pkgconfig:$b/root/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$b/root
export TANDEM_TOKENIZER_DIR=${TANDEM_TOKENIZER_DIR:-$b/gpt2}
if [ -x "$b/programs/tandem-h5walk" ]; then export TANDEM_H5_WALK=${TANDEM_H5_WALK:-$b/programs/tandem-h5walk}; fi
usr=$b/root/usr/bin
case $(basename "$0") in
  mpirun | mpiexec) exec "$usr/orterun" "$@" ;;
  # Open MPI's wrapper finds its settings by the name it is called by.
  mpicc) exec -a mpicc "$usr/opal_wrapper" "$@" ;;
  ompi_info) exec "$usr/ompi_info" "$@" ;;
  pkg-config) exec "$b/$(sed -n 's/^# pkg-config //p' "$b/MANIFEST")" "$@" ;;
  *)
    [ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
    exec "$@"
    ;;
esac
