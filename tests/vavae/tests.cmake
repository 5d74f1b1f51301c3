# apps/vavae's pieces (VAE, DiT, rectified flow, sampler), linked from its
# library (vavae_lib, apps/CMakeLists.txt). Included from tests/CMakeLists.txt after
# find_package(GTest); paths are taken from this file's folder.
file(GLOB VAVAE_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
add_executable(vavae_tests ${VAVAE_TEST_SOURCES})
target_link_libraries(vavae_tests PRIVATE vavae_lib GTest::gtest GTest::gtest_main)
tandem_use_pch(vavae_tests)
tandem_gtest_by_file(vavae_tests vavae SOURCES ${VAVAE_TEST_SOURCES} LABELS vavae)

# Debian's Fashion-MNIST (dataset-fashion-mnist) in the data_split layout, for
# the pipeline test below.
find_package(ZLIB REQUIRED)
add_executable(vavae_fashion_mnist_split ${CMAKE_CURRENT_LIST_DIR}/fixture/fashion_mnist_split.cpp)
target_link_libraries(vavae_fashion_mnist_split PRIVATE tandem_core ZLIB::ZLIB)
tandem_use_pch(vavae_fashion_mnist_split)
add_executable(vavae_vf_features ${CMAKE_CURRENT_LIST_DIR}/fixture/vf_features.cpp)
target_link_libraries(vavae_vf_features PRIVATE tandem_core)
tandem_use_pch(vavae_vf_features)

# The program as users run it: every stage of the tiny pipeline under two
# ranks on Fashion-MNIST (skipped where the package is absent), and stopped at
# the door by bad input.
add_test(NAME vavae_fashion_mnist_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/pipeline.sh $<TARGET_FILE:vavae>
                 $<TARGET_FILE:vavae_fashion_mnist_split> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_SOURCE_DIR}/jobs/vavae-tiny.toml /usr/share/datasets/fashion-mnist
                 ${CMAKE_CURRENT_BINARY_DIR}/vavae-fashion
                 ${TANDEM_TEST_PYTHON} ${CMAKE_SOURCE_DIR}/tests/peers/tensorboard_reads_events.py)
set_tests_properties(vavae_fashion_mnist_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "vavae;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)
add_test(NAME vavae_vf_features_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/vf.sh $<TARGET_FILE:vavae> $<TARGET_FILE:vavae_fashion_mnist_split>
                 $<TARGET_FILE:vavae_vf_features> ${MPIEXEC_EXECUTABLE} ${CMAKE_SOURCE_DIR}/jobs/vavae-tiny.toml
                 /usr/share/datasets/fashion-mnist ${CMAKE_CURRENT_BINARY_DIR}/vavae-vf)
set_tests_properties(vavae_vf_features_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "vavae;e2e" TIMEOUT 600 SKIP_RETURN_CODE 77)
add_test(NAME vavae_distances_2ranks
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/distances.sh $<TARGET_FILE:vavae> $<TARGET_FILE:vavae_fashion_mnist_split>
                 $<TARGET_FILE:vavae_tests> ${MPIEXEC_EXECUTABLE} ${CMAKE_SOURCE_DIR}/jobs/vavae-tiny.toml
                 /usr/share/datasets/fashion-mnist ${TANDEM_TEST_PYTHON}
                 ${CMAKE_SOURCE_DIR}/tests/peers/tensorboard_reads_events.py ${CMAKE_CURRENT_BINARY_DIR}/vavae-distances)
set_tests_properties(vavae_distances_2ranks PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "vavae;e2e" TIMEOUT 600 SKIP_RETURN_CODE 77)
foreach(case missing-root wrong-layout empty-user warmup-past-steps sample-without-latents vf-weight
             best-metric-without-inception)
  add_test(NAME vavae_bad_input_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/bad_input.sh $<TARGET_FILE:vavae> ${case}
                   ${CMAKE_CURRENT_BINARY_DIR}/vavae-bad-${case})
  set_tests_properties(vavae_bad_input_${case} PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                       LABELS "vavae;e2e" TIMEOUT 120)
endforeach()

# vavae has no default command: none, or one too many, stops at the door.
tandem_e2e_test(vavae_no_command STATUS 2
  MATCH "no command: expected plan, train-vae, extract, train-dit, sample, evaluate or complete"
  COMMAND $<TARGET_FILE:vavae>)
# plan: the full job's VAE at micro-batch 8 is over two T4s by its estimate
# (jobs/vavae.toml says so), within two A100s; the tiny job fits the CPU.
tandem_e2e_test(vavae_plan_t4 STATUS 2
  MATCH "train-vae, dist.shard = \"none\": vae.micro_batch = 8 \\(recompute none\\) plans [0-9]+ MB per rank, more than 13125 MB; vae.micro_batch = \"auto\" with train.global_batch = 16 \\(this job.s\\) would take 4"
  COMMAND $<TARGET_FILE:vavae> plan --config ${CMAKE_SOURCE_DIR}/jobs/vavae.toml --gpus t4x2)
tandem_e2e_test(vavae_plan_a100 STATUS 0
  MATCH "^train-vae: images of 256 x 256" "^train-dit: latents of 32 x 16 x 16" "^evaluate's classifier: images"
  COMMAND $<TARGET_FILE:vavae> plan --config ${CMAKE_SOURCE_DIR}/jobs/vavae.toml --gpus a100-40gbx2)
tandem_e2e_test(vavae_extra_argument STATUS 2 MATCH "unexpected argument 'extra' after sample"
  COMMAND $<TARGET_FILE:vavae> sample extra)
