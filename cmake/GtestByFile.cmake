# One ctest test per test source file, not per GoogleTest case.
#
# gtest_discover_tests makes every case its own process, and each process
# loads LibTorch first: with ~700 cases that start-up was a quarter of the
# suite's time on 2 cores, for cases that take milliseconds. A file is one
# concern (test_config.cpp, test_gpt2.cpp), so a file's cases run in one
# process, as ctest test PREFIX.STEM (STEM: the file's name less "test_",
# after its folder under BASE when given: BASE/train/test_ema.cpp is
# PREFIX.train.ema),
# under a --gtest_filter of the suites the file defines. A failing or hanging
# case is still named: by the test's output (--output-on-failure), which lists
# each case. Cases that skip (a GPU test without a GPU) say so in that output;
# the file's test passes when none fails.
#
#   tandem_gtest_by_file(TARGET PREFIX SOURCES file... [BASE dir] LABELS label... [ENVIRONMENT VAR=value...]
#                        [TIMEOUT s])
#
# Suites come from the lines that open a case, TEST(Suite, ...), TEST_F and
# TEST_P, at the start of a line. PREFIX.every_case_has_a_file checks that the
# files' filters together select every case the program lists, so a case
# written some other way (a macro of our own) cannot silently go unrun.
function(tandem_gtest_by_file target prefix)
  cmake_parse_arguments(T "" "TIMEOUT;BASE" "SOURCES;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(every)
  set(tests)
  foreach(src IN LISTS T_SOURCES)
    file(STRINGS ${src} opening REGEX "^[ ]*TEST(_F|_P)?\\([ ]*[A-Za-z0-9_]+[ ]*,")
    set(suites)
    foreach(line IN LISTS opening)
      string(REGEX REPLACE "^[ ]*TEST(_F|_P)?\\([ ]*([A-Za-z0-9_]+).*" "\\2" suite "${line}")
      list(APPEND suites ${suite})
    endforeach()
    list(REMOVE_DUPLICATES suites)
    if(NOT suites)
      continue()
    endif()
    # Suite.Case, and TEST_P's Instance/Suite.Case/Param.
    set(filter)
    foreach(suite IN LISTS suites)
      list(APPEND filter "${suite}.*" "*/${suite}.*")
    endforeach()
    list(JOIN filter ":" filter)
    list(APPEND every ${filter})
    get_filename_component(stem ${src} NAME_WE)
    string(REGEX REPLACE "^test_" "" stem ${stem})
    if(T_BASE)
      get_filename_component(folder ${src} DIRECTORY)
      file(RELATIVE_PATH folder ${T_BASE} ${folder})
      if(folder)
        string(REPLACE "/" "." folder ${folder})
        set(stem ${folder}.${stem})
      endif()
    endif()
    add_test(NAME ${prefix}.${stem} COMMAND ${target} --gtest_filter=${filter} --gtest_color=no)
    list(APPEND tests ${prefix}.${stem})
  endforeach()
  list(JOIN every ":" every)
  add_test(NAME ${prefix}.every_case_has_a_file
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${target}> -DFILTER=${every}
                   -P ${PROJECT_SOURCE_DIR}/cmake/GtestCover.cmake)
  list(APPEND tests ${prefix}.every_case_has_a_file)
  set_tests_properties(${tests} PROPERTIES LABELS "${T_LABELS}" ENVIRONMENT "${T_ENVIRONMENT}" TIMEOUT ${T_TIMEOUT})
endfunction()
