# shellcheck shell=sh
# Open MPI's settings for runs on this machine, in one place: sourced by the
# env scripts, and by kaggle/run.sh and slurm/train.sh through
# launch_openmpi_env (env/launch_lib.sh). Plain exports, so that any shell can
# source it; values already set are kept. Open MPI refuses to run as root
# unless told it may (containers, CI, Kaggle run as root). Small machines have
# fewer cores than ranks a test may want, hence oversubscribe.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
  export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
fi
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
