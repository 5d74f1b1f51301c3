# LibTorch, looked for where users have it, in this order:
#   1. Torch_DIR or CMAKE_PREFIX_PATH given on the command line;
#   2. the Python torch package (Kaggle notebooks, the GPU machine), whose
#      wheel carries a full LibTorch, CUDA included;
#   3. the system (Debian's libtorch-dev, 1.13, CPU only).
# A reconfigure reuses the cached Torch_DIR; the cache remembers where it came from.
if(DEFINED CACHE{TANDEM_TORCH_SOURCE} AND Torch_DIR)
  find_package(Torch REQUIRED)
  set(_tandem_torch_source "${TANDEM_TORCH_SOURCE}")
endif()
if(NOT Torch_FOUND AND (Torch_DIR OR CMAKE_PREFIX_PATH))
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(_tandem_torch_source "Torch_DIR/CMAKE_PREFIX_PATH")
  endif()
endif()
if(NOT Torch_FOUND)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import torch; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(_torch_rc EQUAL 0 AND _torch_prefix)
      find_package(Torch QUIET PATHS ${_torch_prefix} NO_DEFAULT_PATH)
      if(Torch_FOUND)
        set(_tandem_torch_source "Python torch package (${_torch_prefix})")
      endif()
    endif()
  endif()
endif()
if(NOT Torch_FOUND)
  find_package(Torch REQUIRED)
  set(_tandem_torch_source "system")
endif()
set(TANDEM_TORCH_SOURCE "${_tandem_torch_source}" CACHE INTERNAL "where LibTorch was found")

# TORCH_CUDA_LIBRARIES is filled only by a LibTorch built with CUDA.
if(TORCH_CUDA_LIBRARIES)
  set(TANDEM_TORCH_HAS_CUDA ON)
else()
  set(TANDEM_TORCH_HAS_CUDA OFF)
endif()
