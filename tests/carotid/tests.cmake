# apps/carotid's tests, linked against its library (apps/CMakeLists.txt).
# Included from tests/CMakeLists.txt after find_package(GTest); paths are taken from this file's folder.
find_package(PkgConfig REQUIRED)
# libxlsxwriter writes the .xlsx files the tests read (libxlsxwriter-dev).
pkg_check_modules(XLSXWRITER REQUIRED IMPORTED_TARGET xlsxwriter)

file(GLOB CAROTID_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
add_executable(carotid_tests ${CAROTID_TEST_SOURCES})
# Tests on the real data find it here and skip when it is absent.
target_compile_definitions(carotid_tests PRIVATE
                           TANDEM_SHARED_DATA="${CMAKE_SOURCE_DIR}/../shared/data")
target_link_libraries(carotid_tests PRIVATE carotid_lib PkgConfig::XLSXWRITER
                      GTest::gtest GTest::gtest_main)
tandem_use_pch(carotid_tests)
tandem_gtest_by_file(carotid_tests carotid SOURCES ${CAROTID_TEST_SOURCES} LABELS carotid)

# The program as users run it: on the real ultrasound images under two ranks
# (skipped without ../shared/data), and stopped at the door by bad input.
add_test(NAME carotid_breast_ultrasound_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/breast.sh $<TARGET_FILE:carotid> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_SOURCE_DIR}/../shared/data/breast_ultrasound ${CMAKE_CURRENT_BINARY_DIR}/carotid-breast
                 ${TANDEM_TEST_PYTHON} ${CMAKE_SOURCE_DIR}/tests/peers/tensorboard_reads_events.py)
set_tests_properties(carotid_breast_ultrasound_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "carotid;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)
add_test(NAME carotid_cv_breast_ultrasound_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/cv.sh $<TARGET_FILE:carotid> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_SOURCE_DIR}/../shared/data/breast_ultrasound ${CMAKE_CURRENT_BINARY_DIR}/carotid-cv)
set_tests_properties(carotid_cv_breast_ultrasound_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "carotid;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)
add_test(NAME carotid_cv_ensemble_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/cv_ensemble.sh $<TARGET_FILE:carotid> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_SOURCE_DIR}/../shared/data/breast_ultrasound ${CMAKE_CURRENT_BINARY_DIR}/carotid-cv-ensemble)
set_tests_properties(carotid_cv_ensemble_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "carotid;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)
foreach(case missing-root missing-column ratios corrupt-strict label-smoothing mixup threshold ema-bn-without-ema
        cv-report-elsewhere data-seed models-per-fold image-sizes-count image-size-range best-metric temperature)
  add_test(NAME carotid_bad_input_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/bad_input.sh $<TARGET_FILE:carotid> ${case}
                   ${CMAKE_CURRENT_BINARY_DIR}/carotid-bad-${case})
  set_tests_properties(carotid_bad_input_${case} PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                       LABELS "carotid;e2e" TIMEOUT 120)
endforeach()

# A wrong command stops at the door, naming the commands there are.
# plan: the ResNet-18 job on two T4s, from the job file alone.
tandem_e2e_test(carotid_plan STATUS 0
  MATCH "^ResNet-18: images of 224 x 224 pixels, 2 classes" "^\\| fits in 13125 \\| yes"
  COMMAND $<TARGET_FILE:carotid> plan --config ${CMAKE_SOURCE_DIR}/jobs/carotid.toml --gpus t4x2)
tandem_e2e_test(carotid_unknown_command STATUS 2 MATCH "unknown command 'trian': expected train, cv, cv-report, plan, predict or plot"
  COMMAND $<TARGET_FILE:carotid> trian)
tandem_e2e_test(carotid_plot_out_of_place STATUS 2 MATCH "plot must come first: apps/carotid plot RUN_DIR"
  COMMAND $<TARGET_FILE:carotid> --set train.epochs=1 plot)
