# A rank killed (SIGKILL) or hung (SIGSTOP) at random moments of a 2-rank
# run, some while a checkpoint is being written: the job ends within
# dist.timeout_s, and the resumed run ends bitwise where an uninterrupted one
# does. CI runs 4 trials of each; tests/faults/rank_faults.sh runs more.
foreach(fault kill stop)
  add_test(NAME faults_${fault}_rank
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/rank_faults.sh ${fault} $<TARGET_FILE:toy_train>
                   $<TARGET_FILE:compare_runs> ${MPIEXEC_EXECUTABLE} 4)
  set_tests_properties(faults_${fault}_rank PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS faults
                       TIMEOUT 600)
endforeach()
