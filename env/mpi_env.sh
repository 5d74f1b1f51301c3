# Sourced by the env scripts. Open MPI refuses to run as root unless told it
# may (containers, CI, Kaggle run as root); harmless for other users. Small
# machines have fewer cores than ranks a test may want, hence oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
