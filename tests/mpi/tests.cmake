tandem_mpi_test(mpi_collectives ARGS $<TARGET_FILE:mpi_tests> --gtest_filter=Collectives*)

add_executable(dead_rank ${CMAKE_CURRENT_LIST_DIR}/progs/dead_rank.cpp)
target_link_libraries(dead_rank PRIVATE tandem_core)
tandem_use_pch(dead_rank)
# Both must fail, and fail fast: a hang is a ctest timeout, which fails the test
# even with WILL_FAIL.
tandem_mpi_test(mpi_dead_rank_crash TIMEOUT 60 ARGS $<TARGET_FILE:dead_rank> crash)
set_tests_properties(mpi_dead_rank_crash PROPERTIES WILL_FAIL TRUE)
tandem_mpi_test(mpi_dead_rank_leave TIMEOUT 60 ARGS $<TARGET_FILE:dead_rank> leave)
set_tests_properties(mpi_dead_rank_leave PROPERTIES
                     PASS_REGULAR_EXPRESSION "watchdog: allreduce\\(sum\\) f32\\[8\\] on rank 0 has not finished")
