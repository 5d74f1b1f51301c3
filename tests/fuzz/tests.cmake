# Fuzz targets, one per parser a user's file reaches (tests/fuzz/README.md).
# In the ordinary build each is a replay program: ctest runs the seeds
# fuzz_seeds writes, the kept corpus and every input that once crashed through
# it (label fuzz, seconds). Configured with TANDEM_FUZZ=ON (tests/fuzz/run.sh)
# they are libFuzzer programs instead.
set(_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
add_library(fuzz_support STATIC ${_fuzz_dir}/fuzz_input.cpp)
target_link_libraries(fuzz_support PUBLIC tandem_core)
target_include_directories(fuzz_support PUBLIC ${_fuzz_dir})
if(NOT TANDEM_FUZZ)
  add_library(fuzz_replay STATIC ${_fuzz_dir}/replay_main.cpp)
endif()

# Writes the seed inputs of every target from the same writers the tests use.
add_executable(fuzz_seeds ${_fuzz_dir}/fuzz_seeds.cpp)
target_link_libraries(fuzz_seeds PRIVATE vavae_lib PkgConfig::XLSXWRITER)
target_include_directories(fuzz_seeds PRIVATE ${STB_INCLUDE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/unit
                           ${CMAKE_CURRENT_SOURCE_DIR}/carotid)
tandem_use_pch(fuzz_seeds)
add_test(NAME fuzz_seeds COMMAND fuzz_seeds ${CMAKE_BINARY_DIR}/fuzz-seeds ${PROJECT_SOURCE_DIR}/jobs)
set_tests_properties(fuzz_seeds PROPERTIES FIXTURES_SETUP fuzz_seeds LABELS fuzz TIMEOUT 60)

#   tandem_fuzz_target(NAME LIBS...): tests/fuzz/fuzz_NAME.cpp, linked with LIBS.
function(tandem_fuzz_target name)
  add_executable(fuzz_${name} ${_fuzz_dir}/fuzz_${name}.cpp)
  target_link_libraries(fuzz_${name} PRIVATE fuzz_support ${ARGN})
  tandem_use_pch(fuzz_${name})
  if(TANDEM_FUZZ)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  else()
    target_link_libraries(fuzz_${name} PRIVATE fuzz_replay)
  endif()
  set(inputs ${CMAKE_BINARY_DIR}/fuzz-seeds/${name})
  foreach(kept corpus regressions)
    if(EXISTS ${_fuzz_dir}/${kept}/${name})
      list(APPEND inputs ${_fuzz_dir}/${kept}/${name})
    endif()
  endforeach()
  if(NOT TANDEM_FUZZ)
    add_test(NAME fuzz_replay_${name} COMMAND fuzz_${name} ${inputs})
    set_tests_properties(fuzz_replay_${name} PROPERTIES FIXTURES_REQUIRED fuzz_seeds LABELS fuzz TIMEOUT 300)
  endif()
endfunction()

tandem_fuzz_target(csv)
tandem_fuzz_target(config summarize_lib)
tandem_fuzz_target(label_sheet carotid_lib)
tandem_fuzz_target(safetensors)
tandem_fuzz_target(hf_config summarize_lib)
tandem_fuzz_target(bpe summarize_lib)
tandem_fuzz_target(image)
tandem_fuzz_target(h5 vavae_lib)
# The inputs on which libhdf5 loops forever are refused once the walker has
# read nothing for this long (io/h5_guard.h); 60 s, the default, would make
# the replay wait a minute for each.
if(NOT TANDEM_FUZZ)
  set_tests_properties(fuzz_replay_h5 PROPERTIES ENVIRONMENT TANDEM_H5_STALL_S=3)
endif()
