# Builds for finding bugs rather than shipping (tests/fuzz/run.sh configures
# one in build-fuzz/): TANDEM_SANITIZE=address;undefined (or thread) instruments
# every target, TANDEM_FUZZ=ON adds libFuzzer's coverage hooks and makes the
# targets in tests/fuzz libFuzzer programs. Both need clang. LibTorch, HDF5 and
# MPI stay uninstrumented: what is checked is tandem's own code.
set(TANDEM_SANITIZE "" CACHE STRING "Sanitizers to build with (clang): address;undefined or thread")
option(TANDEM_FUZZ "Build tests/fuzz as libFuzzer programs (clang)" OFF)

if(TANDEM_SANITIZE OR TANDEM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TANDEM_SANITIZE and TANDEM_FUZZ need clang: configure with CXX=clang++ CC=clang")
  endif()
  set(_sanitizers ${TANDEM_SANITIZE})
  if(TANDEM_FUZZ AND NOT _sanitizers)
    set(_sanitizers address undefined)
  endif()
  list(JOIN _sanitizers "," _list)
  # Undefined behaviour stops the program, as a crash would, so that libFuzzer
  # and the tests see it; frame pointers keep the reports' stacks whole.
  add_compile_options(-fsanitize=${_list} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${_list})
  set(TANDEM_UBSAN OFF)
  if("undefined" IN_LIST _sanitizers)
    set(TANDEM_UBSAN ON)
    add_compile_options(-fno-sanitize-recover=undefined)
    # The vptr check needs every library a class comes from instrumented;
    # LibTorch's are not.
    add_compile_options(-fno-sanitize=vptr)
    add_link_options(-fno-sanitize=vptr)
  endif()
  if(TANDEM_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
