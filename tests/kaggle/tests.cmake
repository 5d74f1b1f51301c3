# kaggle/run.sh as a notebook cell starts it, on this machine with a fake
# nvidia-smi (label kaggle).
#   ctest -L kaggle
foreach(case dry-run-t4x2 dry-run-cpu dry-run-one-gpu run-cpu run-monitor interrupt interrupt-before-launch
        build-notebook missing-libs check-fails cmake-3.22)
  add_test(NAME kaggle_${case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/kaggle_test.sh ${case} ${CMAKE_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR})
  set_tests_properties(kaggle_${case} PROPERTIES LABELS kaggle TIMEOUT 900
                       SKIP_RETURN_CODE 77 ENVIRONMENT "TANDEM_TEST_PYTHON=${TANDEM_TEST_PYTHON}")
endforeach()
# kaggle/tandem.ipynb run top to bottom in a real Jupyter kernel (nbclient +
# ipykernel from TANDEM_TEST_PYTHON, the venv), with a fake nvidia-smi listing
# two T4s, tiny jobs on the CPU and data made from Fashion-MNIST by tests/vavae's
# fixture. It uses this build's programs and never builds. Skipped (77) without
# nbclient or ipykernel, or without Fashion-MNIST. ctest -L kaggle
add_test(NAME kaggle_notebook
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/notebook_test.py ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR} $<TARGET_FILE:vavae_fashion_mnist_split> /usr/share/datasets/fashion-mnist
                 ${CMAKE_CURRENT_BINARY_DIR}/kaggle-notebook)
set_tests_properties(kaggle_notebook PROPERTIES LABELS kaggle TIMEOUT 600 SKIP_RETURN_CODE 77)
