# Whole programs, as users run them.
set(TANDEM_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect.sh)

function(tandem_e2e_test name)
  cmake_parse_arguments(T "" "STATUS;TIMEOUT" "MATCH;COMMAND" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${TANDEM_EXPECT} ${T_STATUS} ${T_MATCH} -- ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS e2e
                       TIMEOUT ${T_TIMEOUT})
endfunction()

set(MPIRUN2 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2)

tandem_e2e_test(envcheck_report STATUS 0 MATCH "Ranks: 2 on 1 node"
  COMMAND ${MPIRUN2} $<TARGET_FILE:envcheck>)
tandem_e2e_test(envcheck_selftest_2ranks STATUS 0
  MATCH "Self-test passed on every rank" "average busbw"
  COMMAND ${MPIRUN2} $<TARGET_FILE:envcheck> --test --set envcheck.max_mb=4
          --set envcheck.iters=3)
tandem_e2e_test(envcheck_bad_key STATUS 2
  MATCH "unknown key 'dist.backnd' \\(did you mean 'dist.backend'\\?\\)"
  COMMAND $<TARGET_FILE:envcheck> --set dist.backnd=mpi)
tandem_e2e_test(envcheck_bad_key_2ranks STATUS 2 MATCH "did you mean 'dist.backend'"
  COMMAND ${MPIRUN2} $<TARGET_FILE:envcheck> --set dist.backnd=mpi)
# The GPU-math keys are checked at the door on any machine, GPU or not.
tandem_e2e_test(envcheck_bad_gpu_math_key STATUS 2 MATCH "dist.tf32 must be a boolean, got 'maybe'"
  COMMAND $<TARGET_FILE:envcheck> --set dist.tf32=maybe)
tandem_e2e_test(envcheck_nccl_without_gpu STATUS 2 MATCH "set dist.backend = \"mpi\""
  COMMAND $<TARGET_FILE:envcheck> --set dist.backend=nccl --set dist.device=cpu)

# The shared training loop on a toy task.
foreach(prog toy_train compare_runs)
  add_executable(${prog} ${CMAKE_CURRENT_LIST_DIR}/../progs/${prog}.cpp)
  target_link_libraries(${prog} PRIVATE tandem_core nlohmann_json::nlohmann_json)
  tandem_use_pch(${prog})
endforeach()
foreach(case invariance resume resume_drawn_seed ema ema_bn resume_other_world preempt_one_rank bad_input nonfinite
                 damaged_checkpoint oom_backoff micro_batch_auto early_stop shard eight_bit master_weights)
  add_test(NAME train_loop_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/train_loop.sh $<TARGET_FILE:toy_train>
                   $<TARGET_FILE:compare_runs> ${MPIEXEC_EXECUTABLE} ${case})
  set_tests_properties(train_loop_${case} PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                       LABELS "e2e;train" TIMEOUT 300)
endforeach()

# A misspelt dist.shard stops at the door, naming the key and its choices.
tandem_e2e_test(train_shard_bad_value STATUS 2
  MATCH "dist.shard must be one of none\\|optimizer\\|gradients, got \"optimiser\""
  COMMAND $<TARGET_FILE:toy_train> --set dist.shard=optimiser)
# So does an unknown train.optimizer_state, before any work.
tandem_e2e_test(train_optimizer_state_bad_value STATUS 2
  MATCH "train.optimizer_state must be one of fp32\\|8bit, got \"int8\""
  COMMAND $<TARGET_FILE:toy_train> --set train.optimizer_state=int8)

# train.master_weights = "sharded" needs half precision and shards to keep
# its masters in: each refusal names the keys, before any work.
tandem_e2e_test(train_master_weights_fp32 STATUS 2
  MATCH "train.master_weights = \"sharded\" keeps the working weights in half precision, and train.precision = \"fp32\""
  COMMAND $<TARGET_FILE:toy_train> --set train.master_weights=sharded --set train.precision=fp32 --set dist.shard=gradients)
tandem_e2e_test(train_master_weights_unsharded STATUS 2
  MATCH "train.master_weights = \"sharded\" keeps the fp32 masters in the optimizer's shards, and dist.shard = \"none\""
  COMMAND $<TARGET_FILE:toy_train> --set train.master_weights=sharded --set train.precision=bf16)

# srun without PMIx: each task would be a world of one. Refused before any work.
tandem_e2e_test(envcheck_alone_under_srun STATUS 2
  MATCH "SLURM_STEP_NUM_TASKS=4\) but MPI sees a world of 1"
  COMMAND ${CMAKE_COMMAND} -E env SLURM_STEP_NUM_TASKS=4 $<TARGET_FILE:envcheck>)
