# The CUDA runtime and NCCL that tandem links are the ones LibTorch itself
# loads: one process must hold one CUDA runtime and one NCCL. Two runtimes
# (say the toolkit's libcudart.so.13 next to torch's libcudart.so.12) each
# keep their own contexts and streams, and a CUDA stream or event made by one
# is garbage to the other.
#
# TANDEM_TORCH_HAS_CUDA: LibTorch was built with CUDA; tandem then links its
#   CUDA runtime and asks it about GPUs (names, memory, compute capability).
# TANDEM_HAVE_NCCL: the NCCL backend is built (needs TANDEM_TORCH_HAS_CUDA).
#
# What torch loads is read off libtorch_cuda.so with ldd, which follows the
# library's own RUNPATH: for a PyPI wheel, the nvidia-* packages in
# site-packages (libcudart.so.13 in nvidia/cu13/lib, libnccl.so.2 with its
# nccl.h in nvidia/nccl); for a downloaded LibTorch, the copies in its lib/.
# LibTorch's CMake package compiles against the CUDA toolkit it finds, so that
# toolkit's major version must equal the runtime's (minor versions are
# compatible within a major version).
set(TANDEM_TORCH_HAS_CUDA OFF)
set(TANDEM_HAVE_NCCL OFF)
set(TANDEM_CUDA_WHY "")
if(TORCH_CUDA_LIBRARIES)
  set(TANDEM_TORCH_HAS_CUDA ON)
endif()

if(NOT TANDEM_TORCH_HAS_CUDA)
  set(TANDEM_CUDA_WHY "LibTorch ${Torch_VERSION} is a CPU build")
else()
  find_library(_torch_cuda_lib torch_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
  execute_process(COMMAND ldd "${_torch_cuda_lib}" OUTPUT_VARIABLE _ldd RESULT_VARIABLE _ldd_rc
                  ERROR_QUIET)
  # "libcudart.so.13 => /path/libcudart.so.13 (0x...)"; a downloaded LibTorch
  # carries a renamed copy, "libcudart-0a1b2c3d.so.12".
  string(REGEX MATCH "libcudart[-0-9a-f]*\\.so\\.([0-9]+) => ([^ \n]+)" _m "${_ldd}")
  get_filename_component(TANDEM_CUDART "${CMAKE_MATCH_2}" ABSOLUTE)
  set(TANDEM_TORCH_CUDA_MAJOR "${CMAKE_MATCH_1}")
  string(REGEX MATCH "libnccl\\.so\\.[0-9]+ => ([^ \n]+)" _m "${_ldd}")
  set(_torch_nccl "")
  if(CMAKE_MATCH_1)
    get_filename_component(_torch_nccl "${CMAKE_MATCH_1}" ABSOLUTE)
  endif()
  if(NOT TANDEM_CUDART OR NOT EXISTS "${TANDEM_CUDART}")
    message(FATAL_ERROR "LibTorch ${Torch_VERSION} has CUDA, but the CUDA runtime "
            "libtorch_cuda.so loads was not found (ldd ${_torch_cuda_lib}):\n${_ldd}\n"
            "For a PyPI torch, reinstall it with its nvidia-* dependencies.")
  endif()
  # Every target that links CUDA::cudart (torch_cuda and c10_cuda through
  # torch::cudart, and tandem) now gets torch's runtime; nvrtc, which tandem
  # does not call and torch opens itself when it needs it, is dropped. Also
  # with TANDEM_CUDA=OFF: LibTorch still loads its runtime and NCCL, and the
  # linker must not find the toolkit's copies for it (an older libnccl lacks
  # symbols libtorch_cuda.so needs).
  set_property(TARGET CUDA::cudart PROPERTY IMPORTED_LOCATION "${TANDEM_CUDART}")
  list(FILTER TORCH_LIBRARIES EXCLUDE REGEX "libnvrtc")
endif()
if(TANDEM_TORCH_HAS_CUDA AND TANDEM_CUDA STREQUAL "OFF")
  set(TANDEM_CUDA_WHY "TANDEM_CUDA=OFF")
  set(TANDEM_TORCH_HAS_CUDA OFF)
elseif(TANDEM_TORCH_HAS_CUDA)
  string(REGEX MATCH "^[0-9]+" _toolkit_major "${CUDAToolkit_VERSION}")
  if(NOT _toolkit_major STREQUAL TANDEM_TORCH_CUDA_MAJOR)
    message(FATAL_ERROR "LibTorch ${Torch_VERSION} runs on CUDA ${TANDEM_TORCH_CUDA_MAJOR} "
            "(${TANDEM_CUDART}) but compiles against the CUDA ${CUDAToolkit_VERSION} toolkit "
            "in ${CUDAToolkit_BIN_DIR}: linking both would put two CUDA runtimes in one process. "
            "Point CUDAToolkit_ROOT at a CUDA ${TANDEM_TORCH_CUDA_MAJOR} toolkit, use a torch "
            "built for CUDA ${_toolkit_major}, or configure with -DTANDEM_CUDA=OFF.")
  endif()
  # NCCL: torch's own (PyPI), else NCCL_HOME or the toolkit's (a downloaded
  # LibTorch links NCCL statically and exports none).
  if(_torch_nccl)
    get_filename_component(_nccl_root "${_torch_nccl}" DIRECTORY)
    get_filename_component(_nccl_root "${_nccl_root}" DIRECTORY)
    set(NCCL_LIBRARY "${_torch_nccl}")
    find_path(NCCL_INCLUDE_DIR nccl.h PATHS "${_nccl_root}/include" NO_DEFAULT_PATH)
  else()
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS $ENV{NCCL_HOME} ${CUDAToolkit_INCLUDE_DIRS}
              PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS $ENV{NCCL_HOME}
                 ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  endif()
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TANDEM_HAVE_NCCL ON)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
           "\\1.\\2.\\3" NCCL_VERSION "${_nccl_ver}")
  else()
    set(TANDEM_CUDA_WHY "NCCL not found next to LibTorch, in NCCL_HOME or the CUDA toolkit")
  endif()
endif()
if(TANDEM_CUDA STREQUAL "ON" AND NOT TANDEM_HAVE_NCCL)
  message(FATAL_ERROR "TANDEM_CUDA=ON but the NCCL backend cannot be built: ${TANDEM_CUDA_WHY}")
endif()
