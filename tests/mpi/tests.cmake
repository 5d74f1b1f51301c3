tandem_mpi_test(mpi_collectives ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=*Collectives*)
# The block collectives ZeRO shards with, on world sizes that do not divide
# evenly into the usual powers of two as well as on four.
foreach(ranks 3 4)
  tandem_mpi_test(mpi_collectives_${ranks}ranks RANKS ${ranks}
                  ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=*Collectives.ReduceScatter*:*Collectives.Allgather*)
endforeach()


add_executable(dead_rank ${CMAKE_CURRENT_LIST_DIR}/progs/dead_rank.cpp)
target_link_libraries(dead_rank PRIVATE tandem_core)
tandem_use_pch(dead_rank)
# A rank that leaves must fail the job fast: a hang would be a ctest timeout.
# A crash is the launcher's to notice; a clean exit only the watchdog sees.
tandem_e2e_test(mpi_dead_rank_crash STATUS nonzero TIMEOUT 60 MATCH "."
  COMMAND ${MPIRUN2} $<TARGET_FILE:dead_rank> crash)
tandem_e2e_test(mpi_dead_rank_leave STATUS 3 TIMEOUT 60
  MATCH "watchdog: allreduce\\(sum\\) f32\\[8\\] on rank 0 has not finished after 3 s"
  COMMAND ${MPIRUN2} $<TARGET_FILE:dead_rank> leave)
# A rank stopped after its last collective: MPI_Finalize would wait for it,
# and mpiexec with it, for good.
tandem_e2e_test(mpi_dead_rank_stop STATUS 3 TIMEOUT 60
  MATCH "MPI shut-down has not finished after 3 s \\(dist.timeout_s\\) on .*, rank 0: another rank is stopped"
  COMMAND ${MPIRUN2} $<TARGET_FILE:dead_rank> stop)
add_executable(command_limits ${CMAKE_CURRENT_LIST_DIR}/progs/command_limits.cpp)
target_link_libraries(command_limits PRIVATE tandem_core)
tandem_use_pch(command_limits)
# dist.timeout_s holds in every command, not only in training: a rank stopped
# inside one ends the job after 2 s (600 s before issue 59), naming the
# collective; one-sided set-up longer than it is held to
# dist.setup_timeout_s instead.
tandem_e2e_test(mpi_command_timeout STATUS 3 TIMEOUT 60
  MATCH "watchdog: allreduce\\(sum\\) f32\\[8\\] on rank 0 has not finished after 2 s \\(dist.timeout_s\\)"
  COMMAND ${MPIRUN2} $<TARGET_FILE:command_limits> stop --set dist.timeout_s=2)
tandem_e2e_test(mpi_command_setup_wait STATUS 0 TIMEOUT 60
  MATCH "waiting up to 30 s \\(dist.setup_timeout_s\\) for rank 0 to prepare the data"
  COMMAND ${MPIRUN2} $<TARGET_FILE:command_limits> setup --set dist.timeout_s=1 --set dist.setup_timeout_s=30)
# A limit that is no limit stops at the door, naming the key.
tandem_e2e_test(mpi_command_setup_timeout_refused STATUS 2 TIMEOUT 60
  MATCH "dist.setup_timeout_s must be > 0, got 0 \\(--set\\)"
  COMMAND ${MPIRUN2} $<TARGET_FILE:command_limits> setup --set dist.setup_timeout_s=0)
set_tests_properties(mpi_dead_rank_crash mpi_dead_rank_leave mpi_dead_rank_stop mpi_command_timeout
                     mpi_command_setup_wait mpi_command_setup_timeout_refused PROPERTIES LABELS mpi)
tandem_mpi_test(mpi_world ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=World*:Seeds*:GatherInOrder*)
# World size 1 on one GPU, as the issue asks; skips where no GPU is visible.
tandem_mpi_test(mpi_nccl RANKS 1 ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=Nccl*)
set_tests_properties(mpi_nccl PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
tandem_mpi_test(mpi_grad_sync ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=*GradSync*:BatchNormStats*:TrainerBuffers*)
# Running statistics pooled on 3 ranks, where a float32 average of equal
# values is not exact.
tandem_mpi_test(mpi_batch_norm_pooling_3ranks RANKS 3 ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=BatchNormPooling*)
# One objective however the batch is split: 1 x 16 and 4 x 4 on one rank,
# 8 x 1 and 2 x 4 on two.
tandem_mpi_test(mpi_objective_1rank RANKS 1 ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=TrainerObjective*)
tandem_mpi_test(mpi_objective ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=TrainerObjective*)
# The collective contract (communicator.h), the same cases on each backend:
# MPI's on 2 ranks, NCCL's on 1 rank (one GPU; they skip without one, and
# env/gpu-check.sh's contract-nccl requires them not to).
tandem_mpi_test(mpi_contract ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=ContractTeardown*:*Contract*/mpi*)
tandem_mpi_test(mpi_contract_nccl RANKS 1 ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=*Contract*/nccl*)
set_tests_properties(mpi_contract mpi_contract_nccl PROPERTIES LABELS "mpi;contract")
set_tests_properties(mpi_contract_nccl PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
# ZeRO-1's split and its optimizer, bitwise against the unsharded one, on
# world sizes that cut the tensors in different places.
foreach(ranks 2 3 4)
  tandem_mpi_test(mpi_param_shards_${ranks}ranks RANKS ${ranks}
                  ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=ParamShards*:ShardedAdamW*:ShardedGradSync*)
endforeach()
