# ccache turns a rebuild after `git pull` into seconds on 2 cores. Precompiled
# headers only hit the cache when ccache may ignore their timestamps and macros.
# Paths under the checkout are hashed relative to it, so a fresh clone in
# another folder (CI's) hits the cache an earlier clone filled.
find_program(TANDEM_CCACHE ccache)
if(TANDEM_CCACHE)
  set(_launcher ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
      ${TANDEM_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${_launcher})
endif()

# __FILE__ (TORCH_CHECK's messages) names a source by its path in the
# checkout, not on this machine: a copy of the repository in another folder
# (kaggle/run.sh building a fresh copy, a second clone) then compiles to the
# same objects and hits the cache, and no message carries the build's paths.
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=>)
