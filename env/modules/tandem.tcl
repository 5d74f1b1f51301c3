#%Module1.0
## tandem: build and run environment for clusters with Environment Modules
## (Tcl). The same as tandem.lua, for sites without Lmod. Use it in place (it
## finds the checkout from its own path, so a copy would point elsewhere):
##   module use /path/to/tandem/env/modules && module load tandem.tcl
## Site names and paths: the first lines below, or TANDEM_MODULE_MPI,
## TANDEM_MODULE_CUDA, TANDEM_MODULE_HDF5, TANDEM_LIBTORCH in the environment.

proc site {var default} {
    if {[info exists ::env($var)]} { return $::env($var) }
    return $default
}
set mpi_module  [site TANDEM_MODULE_MPI  openmpi]
set cuda_module [site TANDEM_MODULE_CUDA cuda]
set hdf5_module [site TANDEM_MODULE_HDF5 hdf5]
set libtorch    [site TANDEM_LIBTORCH    /opt/libtorch/2.9.1-cu128]
# The repository this file sits in: .../tandem/env/modules/tandem.tcl
set root [file dirname [file dirname [file dirname [file normalize $ModulesCurrentModulefile]]]]

proc ModulesHelp {} {
    global root libtorch
    puts stderr "tandem: MPI + LibTorch training jobs (the programs in $root/build/apps)."
    puts stderr "Build once:  cd $root && env/build.sh -DTorch_DIR=$libtorch/share/cmake/Torch"
    puts stderr "Train:       mkdir -p logs && sbatch slurm/train.sh summarize jobs/summarize.toml"
    puts stderr "Multi-node and NCCL settings: $root/slurm/README.md"
}
module-whatis "tandem: MPI + LibTorch training jobs; build and run environment"

foreach m [list $mpi_module $cuda_module $hdf5_module] {
    if {![is-loaded $m]} { module load $m }
}
if {[module-info mode load] && ![file isdirectory $libtorch]} {
    puts stderr "tandem: no LibTorch at $libtorch: set TANDEM_LIBTORCH before loading"
}

setenv       TANDEM_ROOT     $root
setenv       TANDEM_BUILD    $root/build
setenv       Torch_DIR       $libtorch/share/cmake/Torch
prepend-path LD_LIBRARY_PATH $libtorch/lib
prepend-path PATH            $root/build/apps
