# The NCCL backend is written on the CUDA runtime and NCCL alone, so it builds
# wherever the toolkit is, even against a CPU-only LibTorch.
set(TANDEM_HAVE_NCCL OFF)
if(NOT TANDEM_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(NCCL_INCLUDE_DIR nccl.h
      HINTS $ENV{NCCL_HOME} ${CUDAToolkit_INCLUDE_DIRS}
      PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl
      HINTS $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_DIR}
      PATH_SUFFIXES lib lib64)
  endif()
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TANDEM_HAVE_NCCL ON)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
           "\\1.\\2.\\3" NCCL_VERSION "${_nccl_ver}")
  elseif(TANDEM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TANDEM_CUDA=ON but the CUDA toolkit or NCCL was not found "
            "(set CUDAToolkit_ROOT or NCCL_HOME)")
  endif()
endif()
