# The offline bundle (env/bundle.sh, env/build.sh --bundle, kaggle/run.sh
# --bundle): one bundle made by offline_bundle_make, shared by the rest
# (FIXTURES). offline_build builds summarize and envcheck from a fresh copy of
# the repository in a namespace with no network and the machine's copies of
# the bundle's libraries hidden, then runs them on 2 ranks through the bundle's
# mpirun; offline_kaggle-run runs that build through kaggle/run.sh --bundle,
# offline_kaggle-dataset with the bundle as a Kaggle dataset holds it
# (read-only, links and modes lost; the archive).
# ctest -L offline
set(_offline ${CMAKE_CURRENT_BINARY_DIR}/offline)
set(_offline_cmd ${CMAKE_CURRENT_LIST_DIR}/offline_test.sh)
add_test(NAME offline_bundle_make COMMAND ${_offline_cmd} make ${CMAKE_SOURCE_DIR} ${_offline})
set_tests_properties(offline_bundle_make PROPERTIES LABELS offline TIMEOUT 600 FIXTURES_SETUP offline_bundle)
# A bundle for running alone, on a machine without the tests' packages.
add_test(NAME offline_bundle_runtime COMMAND ${_offline_cmd} runtime ${CMAKE_SOURCE_DIR} ${_offline})
set_tests_properties(offline_bundle_runtime PROPERTIES LABELS offline TIMEOUT 600)
foreach(case bad-missing bad-checksum bad-extra bad-arch bad-lacks bad-folder kaggle-bad dataset-bad build)
  add_test(NAME offline_${case} COMMAND ${_offline_cmd} ${case} ${CMAKE_SOURCE_DIR} ${_offline})
  set_tests_properties(offline_${case} PROPERTIES LABELS offline TIMEOUT 300
                       FIXTURES_REQUIRED offline_bundle SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(offline_build PROPERTIES TIMEOUT 3600 FIXTURES_SETUP offline_built)
foreach(case kaggle-run kaggle-dataset)
  add_test(NAME offline_${case} COMMAND ${_offline_cmd} ${case} ${CMAKE_SOURCE_DIR} ${_offline})
  set_tests_properties(offline_${case} PROPERTIES LABELS offline TIMEOUT 300
                       FIXTURES_REQUIRED "offline_bundle;offline_built" SKIP_RETURN_CODE 77)
endforeach()
# Crafted archives need no bundle.
add_test(NAME offline_archive-crafted COMMAND ${_offline_cmd} archive-crafted ${CMAKE_SOURCE_DIR} ${_offline})
set_tests_properties(offline_archive-crafted PROPERTIES LABELS offline TIMEOUT 120)
