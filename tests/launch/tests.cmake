# env/launch_lib.sh, what kaggle/run.sh and slurm/train.sh share, on its own:
# signals before and after the start, the double wait, the job-file rule.
# Seconds; no MPI, Slurm or root. ctest -L launch
add_test(NAME launch_lib COMMAND ${CMAKE_CURRENT_LIST_DIR}/launch_lib_test.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(launch_lib PROPERTIES LABELS launch TIMEOUT 120)
