# tandem against the tools users know, from PyPI in tandem's venv (env/setup.sh
# --tests): each test skips (status 77) when its peer is not importable.
add_test(NAME peer_tokenizer_vs_tiktoken
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tokenizer_vs_tiktoken.py
                 $<TARGET_FILE:summarize> - ${CMAKE_CURRENT_BINARY_DIR}/peer-tiktoken)
set_tests_properties(peer_tokenizer_vs_tiktoken PROPERTIES LABELS "peers;summarize"
                     ENVIRONMENT "${TANDEM_MPI_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME peer_rouge_vs_rouge_score
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/rouge_vs_rouge_score.py
                 $<TARGET_FILE:summarize> ${CMAKE_CURRENT_BINARY_DIR}/peer-rouge)
set_tests_properties(peer_rouge_vs_rouge_score PROPERTIES LABELS "peers;summarize"
                     ENVIRONMENT "${TANDEM_MPI_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME peer_gpt2_vs_transformers
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gpt2_vs_transformers.py
                 $<TARGET_FILE:summarize> $<TARGET_FILE:summarize_tests>
                 ${CMAKE_CURRENT_BINARY_DIR}/peer-gpt2)
set_tests_properties(peer_gpt2_vs_transformers PROPERTIES LABELS "peers;summarize"
                     ENVIRONMENT "${TANDEM_MPI_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300)
