# LibTorch 2.x, looked for where users have it, in this order:
#   1. Torch_DIR or CMAKE_PREFIX_PATH given on the command line (a downloaded
#      LibTorch, a site install);
#   2. the Python torch package of TANDEM_PYTHON (env/build.sh passes tandem's
#      venv; a notebook or a cluster passes its own Python), else of the
#      python3 on PATH. Its wheel carries a full LibTorch, CUDA included;
#   3. the system.
# A reconfigure reuses the cached Torch_DIR; the cache remembers where it came from.
set(TANDEM_PYTHON "" CACHE FILEPATH "Python whose torch package provides LibTorch")
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
  set(_python "${TANDEM_PYTHON}")
  if(NOT _python)
    find_program(_python NAMES python3 python)
  endif()
  if(_python)
    execute_process(
      COMMAND ${_python} -c "import torch; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(_torch_rc EQUAL 0 AND _torch_prefix)
      find_package(Torch QUIET PATHS ${_torch_prefix} NO_DEFAULT_PATH)
      if(Torch_FOUND)
        set(_tandem_torch_source "python (${_python})")
      endif()
    elseif(TANDEM_PYTHON)
      message(FATAL_ERROR "TANDEM_PYTHON=${TANDEM_PYTHON} cannot import torch: "
              "install torch>=2.7 there (env/setup.sh makes a venv with it)")
    endif()
  endif()
endif()
if(NOT Torch_FOUND)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    message(FATAL_ERROR "LibTorch 2.7 or newer not found: run env/setup.sh (a venv with "
            "PyPI's torch), pass -DTANDEM_PYTHON=/path/to/python whose torch to use, "
            "or -DTorch_DIR=/path/to/libtorch/share/cmake/Torch")
  endif()
  set(_tandem_torch_source "system")
endif()
set(TANDEM_TORCH_SOURCE "${_tandem_torch_source}" CACHE INTERNAL "where LibTorch was found")

# Wheels before 2.7 were built with the pre-C++11 std::string ABI, which cannot
# link Debian's C++ libraries (liborcus, HDF5's and TOML++'s C++ symbols); 2.7
# is also the oldest LibTorch whose APIs compat.cpp covers.
if(Torch_VERSION VERSION_LESS 2.7)
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} from ${TANDEM_TORCH_SOURCE} (${Torch_DIR}) "
          "is too old: tandem needs 2.7 or newer (env/setup.sh installs a pinned torch 2.x "
          "into a venv; pass -DTANDEM_PYTHON or -DTorch_DIR to choose another)")
endif()
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} at ${Torch_DIR} uses the pre-C++11 ABI, "
          "which cannot link Debian's C++ libraries: use a cxx11-abi LibTorch or torch>=2.7")
endif()
