# env/gpu-check.sh's CPU half, what a machine without GPU runs: the build of
# what it runs, envcheck over MPI, and the tiny jobs' CPU references; every
# GPU check skipped with its reason, and gpu-check.json. ctest -L gpucheck
add_test(NAME gpu_check_cpu_half
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cpu_half.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu-check ${TANDEM_TEST_PYTHON})
set_tests_properties(gpu_check_cpu_half PROPERTIES LABELS gpucheck TIMEOUT 900)
