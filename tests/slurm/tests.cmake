# slurm/'s scripts as users start them, on a private one- or two-node Slurm
# (label slurm; needs root or passwordless sudo and Debian's slurm-wlm and
# munge, else skipped).
#   ctest -L slurm
# Each Slurm case starts and stops its own daemons; they share a lock so two
# clusters never compete for this machine's CPUs.
foreach(case train preempt preempt-mpirun preempt-before-launch pipeline cv)
  add_test(NAME slurm_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/slurm_test.sh ${case} ${CMAKE_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR})
  set_tests_properties(slurm_${case} PROPERTIES LABELS slurm TIMEOUT 900
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK tandem_slurm_cluster)
endforeach()

# Two hosts: the cluster's two slurmds in their own network and UTS
# namespaces, linked by veth pairs (also needs iproute2's ip and nsenter).
foreach(case multinode multinode-pipeline)
  add_test(NAME slurm_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/slurm_test.sh ${case} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(slurm_${case} PROPERTIES LABELS "slurm;multinode" TIMEOUT 900
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK tandem_slurm_cluster)
endforeach()
