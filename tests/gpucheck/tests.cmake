# env/gpu-check.sh's CPU half, what a machine without GPU (CI) runs: the build
# of what it runs (nothing to do in a built tree), envcheck on 2 ranks over MPI,
# the tiny jobs' CPU references (--quick); every GPU check in the table and in
# gpu-check.json as "skipped: no GPU"; exit status 0. Any GPU of the runner is
# hidden. About a minute and a half on 2 cores. ctest -L gpucheck
add_test(NAME gpu_check_cpu_half
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/check_cpu_half.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/gpu-check ${TANDEM_TEST_PYTHON})
set_tests_properties(gpu_check_cpu_half PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS gpucheck TIMEOUT 900)
