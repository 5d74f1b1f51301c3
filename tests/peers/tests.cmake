# tandem against the tools users know, from PyPI in tandem's venv (env/setup.sh
# --tests): each test skips (status 77) when its peer is not importable.
#   tandem_peer_test(NAME SCRIPT ARGS...)   runs tests/peers/SCRIPT ARGS...
function(tandem_peer_test name script)
  add_test(NAME ${name} COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "peers;summarize"
                       ENVIRONMENT "${TANDEM_MPI_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300)
endfunction()

tandem_peer_test(peer_tokenizer_vs_tiktoken tokenizer_vs_tiktoken.py
                 $<TARGET_FILE:summarize> - ${CMAKE_CURRENT_BINARY_DIR}/peer-tiktoken)
tandem_peer_test(peer_rouge_vs_rouge_score rouge_vs_rouge_score.py
                 $<TARGET_FILE:summarize> $<TARGET_FILE:rouge> ${CMAKE_CURRENT_BINARY_DIR}/peer-rouge)
tandem_peer_test(peer_gpt2_vs_transformers gpt2_vs_transformers.py
                 $<TARGET_FILE:summarize> $<TARGET_FILE:summarize_tests>
                 ${CMAKE_CURRENT_BINARY_DIR}/peer-gpt2)
tandem_peer_test(peer_tensorboard_reads_events tensorboard_reads_events.py scalars
                 $<TARGET_FILE:toy_train> ${CMAKE_CURRENT_BINARY_DIR}/peer-tensorboard)
tandem_peer_test(peer_lora_vs_peft lora_vs_peft.py
                 $<TARGET_FILE:summarize_tests> ${CMAKE_CURRENT_BINARY_DIR}/peer-lora)
# Not a PyPI peer: bitsandbytes' definitions of the 8-bit optimizer state,
# written out in numpy, against libcore's blockwise8.
add_test(NAME peer_blockwise8_vs_numpy
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/blockwise8_vs_numpy.py $<TARGET_FILE:unit_tests>
                 ${CMAKE_CURRENT_BINARY_DIR}/peer-blockwise8)
set_tests_properties(peer_blockwise8_vs_numpy PROPERTIES LABELS "peers;unit" SKIP_RETURN_CODE 77 TIMEOUT 300)
# carotid's calibration figures (ECE, Brier, reliability bins, the loss)
# against scikit-learn's on the same predictions.
add_test(NAME peer_calibration_vs_sklearn
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/calibration_vs_sklearn.py
                 $<TARGET_FILE:carotid_tests> ${CMAKE_CURRENT_BINARY_DIR}/peer-calibration)
set_tests_properties(peer_calibration_vs_sklearn PROPERTIES LABELS "peers;carotid" SKIP_RETURN_CODE 77 TIMEOUT 300)
# Grad-CAM maps (tandem/nn/grad_cam.h) against the grad-cam package's on
# the same torchvision-layout ResNet-18 and images, both stems.
add_test(NAME peer_grad_cam_vs_pytorch_grad_cam
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/grad_cam_vs_pytorch_grad_cam.py
                 $<TARGET_FILE:unit_tests> ${CMAKE_CURRENT_BINARY_DIR}/peer-grad-cam)
set_tests_properties(peer_grad_cam_vs_pytorch_grad_cam PROPERTIES LABELS "peers;carotid" SKIP_RETURN_CODE 77 TIMEOUT 300)
# vavae's FID, KID and precision/recall (apps/vavae/metrics/feature_distances.h)
# against pytorch-fid's, clean-fid's and torch-fidelity's on the same features.
add_test(NAME peer_feature_distances
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/feature_distances_vs_peers.py
                 $<TARGET_FILE:vavae_tests> ${CMAKE_CURRENT_BINARY_DIR}/peer-feature-distances)
set_tests_properties(peer_feature_distances PROPERTIES LABELS "peers;vavae" SKIP_RETURN_CODE 77 TIMEOUT 300)
# vavae's FID Inception-v3 (apps/vavae/metrics/fid_inception.h) against
# pytorch-fid's on the same random weights: the same pool3 features.
add_test(NAME peer_fid_inception
         COMMAND ${TANDEM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/fid_inception_vs_pytorch_fid.py
                 $<TARGET_FILE:vavae_tests> ${CMAKE_CURRENT_BINARY_DIR}/peer-fid-inception)
set_tests_properties(peer_fid_inception PROPERTIES LABELS "peers;vavae" SKIP_RETURN_CODE 77 TIMEOUT 300)
