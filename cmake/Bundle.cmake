# Offline builds: with -DTANDEM_BUNDLE=DIR (env/build.sh --bundle DIR), every
# library but LibTorch comes from the bundle env/bundle.sh made, and from
# nowhere else. Packages, libraries and headers are looked for only under the
# bundle's root/, LibTorch's site-packages and the CUDA toolkit
# (CMAKE_FIND_ROOT_PATH_MODE_* ONLY), so a -dev package this machine happens
# to have cannot stand in for one the target lacks. Open MPI and pkg-config
# are the bundle's, run through its launcher (DIR/bin), which moves their
# prefixes to the bundle; HDF5 is found from its folder, without h5cc.
# env/bundle_env.sh has checked the bundle before this runs.
set(TANDEM_BUNDLE "" CACHE PATH "Offline bundle (env/bundle.sh) to build with; empty: this machine's libraries")
if(NOT TANDEM_BUNDLE)
  return()
endif()
get_filename_component(TANDEM_BUNDLE "${TANDEM_BUNDLE}" ABSOLUTE)
file(STRINGS "${TANDEM_BUNDLE}/MANIFEST" _arch REGEX "^# arch ")
file(STRINGS "${TANDEM_BUNDLE}/MANIFEST" _libdirs REGEX "^# libdirs ")
file(STRINGS "${TANDEM_BUNDLE}/MANIFEST" TANDEM_BUNDLE_MADE REGEX "^# (system|made) ")
if(NOT _arch OR NOT _libdirs)
  message(FATAL_ERROR "TANDEM_BUNDLE=${TANDEM_BUNDLE}: no MANIFEST from env/bundle.sh there")
endif()
string(REGEX REPLACE "^# arch [^ ]+ " "" _multiarch "${_arch}")
string(REGEX REPLACE "^# libdirs " "" _libdirs "${_libdirs}")
string(REPLACE ":" ";" _libdirs "${_libdirs}")
list(TRANSFORM _libdirs PREPEND "${TANDEM_BUNDLE}/")
list(TRANSFORM TANDEM_BUNDLE_MADE REPLACE "^# " "")
list(JOIN TANDEM_BUNDLE_MADE ", " TANDEM_BUNDLE_MADE)

set(_root "${TANDEM_BUNDLE}/root")
# Torch_DIR is site-packages/torch/share/cmake/Torch: its site-packages holds
# torch and the nvidia-* packages with the CUDA runtime and NCCL.
get_filename_component(_site "${Torch_DIR}/../../../.." ABSOLUTE)
list(APPEND CMAKE_FIND_ROOT_PATH "${_root}" "${_site}")
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND CMAKE_FIND_ROOT_PATH "${CUDAToolkit_LIBRARY_ROOT}")
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Header-only libraries the system archive lacked (toml++ on Ubuntu 22.04),
# from kaggle/run.sh's release installs.
list(APPEND CMAKE_PREFIX_PATH /opt/tandem-deps/tomlplusplus /opt/tandem-deps/CLI11)

set(MPI_C_COMPILER "${TANDEM_BUNDLE}/bin/mpicc" CACHE FILEPATH "Open MPI's wrapper, the bundle's" FORCE)
set(MPIEXEC_EXECUTABLE "${TANDEM_BUNDLE}/bin/mpiexec" CACHE FILEPATH "mpiexec, the bundle's" FORCE)
set(PKG_CONFIG_EXECUTABLE "${TANDEM_BUNDLE}/bin/pkg-config" CACHE FILEPATH "pkg-config, the bundle's" FORCE)
set(HDF5_ROOT "${_root}/usr/lib/${_multiarch}/hdf5/serial")
# The bundle's libraries need one another (libmpi needs libopen-rte, ...):
# the linker finds them there; at run time the launcher's LD_LIBRARY_PATH does.
list(JOIN _libdirs ":" _libdirs)
string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,-rpath-link,${_libdirs}")
string(APPEND CMAKE_SHARED_LINKER_FLAGS " -Wl,-rpath-link,${_libdirs}")
