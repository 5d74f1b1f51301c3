# Faults on real 2-rank runs. A rank of the toy task killed (SIGKILL) or hung
# (SIGSTOP) at random moments, some while a checkpoint is being written: the
# job ends within dist.timeout_s, and the resumed run ends bitwise where an
# uninterrupted one does. CI runs 4 trials of each; rank_faults.sh runs more.
foreach(fault kill stop)
  add_test(NAME faults_${fault}_rank
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/rank_faults.sh ${fault} $<TARGET_FILE:toy_train>
                   $<TARGET_FILE:compare_runs> ${MPIEXEC_EXECUTABLE} 4)
  set_tests_properties(faults_${fault}_rank PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS faults
                       TIMEOUT 600)
endforeach()

# The output folder's disk fills while a checkpoint, a model, metrics.jsonl or
# a submission is written (a small tmpfs in a private mount namespace; skipped
# where it cannot be mounted).
add_test(NAME faults_disk_full
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/disk_full.sh $<TARGET_FILE:toy_train> $<TARGET_FILE:compare_runs>
                 ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:summarize> ${PROJECT_SOURCE_DIR}/tests/summarize/e2e/dialogues.csv)
set_tests_properties(faults_disk_full PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS faults TIMEOUT 300
                     SKIP_RETURN_CODE 77)

# Inputs changed under a running job: images deleted, a training CSV rewritten.
add_test(NAME faults_inputs_change
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/inputs_change.sh $<TARGET_FILE:carotid> $<TARGET_FILE:summarize>
                 $<TARGET_FILE:compare_runs> ${MPIEXEC_EXECUTABLE})
set_tests_properties(faults_inputs_change PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS faults TIMEOUT 600)
