# apps/summarize's tests, included from tests/CMakeLists.txt after
# e2e/tests.cmake (tandem_e2e_test, MPIRUN2); paths are taken from this
# file's folder.

# Its pieces (tokenizer, ROUGE, model, task), linked from its library.
file(GLOB TANDEM_SUMMARIZE_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
add_executable(summarize_tests ${TANDEM_SUMMARIZE_TESTS})
target_link_libraries(summarize_tests PRIVATE summarize_lib GTest::gtest GTest::gtest_main)
tandem_use_pch(summarize_tests)
tandem_gtest_by_file(summarize_tests summarize SOURCES ${TANDEM_SUMMARIZE_TESTS} LABELS summarize)

# apps/summarize as users run it.
set(SCITLDR ${CMAKE_SOURCE_DIR}/../shared/data/scitldr)
# The demo at 60 of its 300 steps is past the baseline by a clear margin
# (rouge1 0.46 against 0.35; 0.58 at 90 steps, and env/demo.sh's 300 reach
# 0.84). Its folder
# is emptied first: train.resume = "auto" would otherwise finish a second run
# at once from the first one's last checkpoint.
add_test(NAME summarize_demo_fresh
         COMMAND ${CMAKE_COMMAND} -E rm -rf ${CMAKE_CURRENT_BINARY_DIR}/summarize-demo)
set_tests_properties(summarize_demo_fresh PROPERTIES FIXTURES_SETUP summarize_demo_dir LABELS e2e)
tandem_e2e_test(summarize_demo_beats_baseline STATUS 0 TIMEOUT 900
  MATCH "rouge1 beats the first-line baseline" "submission: 100 rows"
  COMMAND ${MPIRUN2} $<TARGET_FILE:summarize> --set train.max_steps=60
          --set train.eval_every=60 --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/summarize-demo
          --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
set_tests_properties(summarize_demo_beats_baseline PROPERTIES FIXTURES_REQUIRED summarize_demo_dir)
tandem_e2e_test(summarize_bad_column STATUS 2 MATCH "no column 'dialog'.*set data.text_column"
  COMMAND $<TARGET_FILE:summarize> --set data.train_csv=${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv
          --set data.text_column=dialog)
tandem_e2e_test(summarize_missing_csv STATUS 2 MATCH "nowhere.csv: no such file"
  COMMAND $<TARGET_FILE:summarize> --set data.train_csv=nowhere.csv)
tandem_e2e_test(summarize_unknown_command STATUS 2 MATCH "unknown command 'trian'"
  COMMAND $<TARGET_FILE:summarize> trian)
# apps/rouge: a missing or unknown flag, or a missing file, stops it with
# status 2 and names it.
tandem_e2e_test(rouge_missing_flag STATUS 2 MATCH "--ref is required"
  COMMAND $<TARGET_FILE:rouge> --pred ${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv)
tandem_e2e_test(rouge_unknown_flag STATUS 2 MATCH "not expected: --stemer.*see rouge --help"
  COMMAND $<TARGET_FILE:rouge> --pred p.csv --ref r.csv --stemer)
tandem_e2e_test(rouge_missing_file STATUS 2 MATCH "nowhere.csv: no such file"
  COMMAND $<TARGET_FILE:rouge> --pred nowhere.csv --ref ${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv)
tandem_e2e_test(summarize_generate_missing_checkpoint STATUS 2 MATCH "checkpoint 'nowhere.h5' not found"
  COMMAND $<TARGET_FILE:summarize> generate --checkpoint nowhere.h5 --prompt hi)
# The commands that take a model file need only the file, and print only
# their output on stdout.
add_test(NAME summarize_model_file_commands
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/model_file_commands.sh $<TARGET_FILE:summarize>
                 ${CMAKE_CURRENT_BINARY_DIR}/model-file-commands)
set_tests_properties(summarize_model_file_commands PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS "summarize;e2e"
                     TIMEOUT 300)
# plan: the jobs' promises, the edge of fitting, --shard all, bad input,
# and the CPU plan against training's (e2e/plan.sh).
add_test(NAME summarize_plan
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/plan.sh $<TARGET_FILE:summarize> ${CMAKE_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/plan)
set_tests_properties(summarize_plan PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS "summarize;e2e" TIMEOUT 300)
# The ROUGE training evaluates is eval's, exactly; a bad count and a ROUGE
# best_metric without ROUGE stop at the door.
add_test(NAME summarize_rouge_during_training
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/rouge_during_training.sh $<TARGET_FILE:summarize>
                 ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/rouge-during-training)
set_tests_properties(summarize_rouge_during_training PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}"
                     LABELS "summarize;e2e" TIMEOUT 300)
tandem_e2e_test(summarize_rouge_samples_negative STATUS 2 MATCH "eval.rouge_samples must be >= 0, got -1 \\(--set\\)"
  COMMAND $<TARGET_FILE:summarize> train --set eval.rouge_samples=-1 --set model.n_layer=1
          --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/rouge-negative
          --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
tandem_e2e_test(summarize_rouge_best_metric_without_rouge STATUS 2
  MATCH "train.best_metric = \"eval_rouge1\" is not a metric this evaluation gives \\(eval_loss\\)"
  COMMAND $<TARGET_FILE:summarize> train --set eval.rouge_samples=0 --set train.best_metric=eval_rouge1
          --set model.n_layer=1 --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/rouge-none
          --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
tandem_e2e_test(summarize_rouge_best_mode_min STATUS 2
  MATCH "train.best_mode = \"min\" would keep the worst eval_rouge1: a larger one is better, so set train.best_mode = \"max\""
  COMMAND $<TARGET_FILE:summarize> train --set eval.rouge_samples=4 --set train.best_metric=eval_rouge1
          --set train.best_mode=min
          --set model.n_layer=1 --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/rouge-min
          --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
tandem_e2e_test(summarize_rouge_no_room STATUS 2
  MATCH "gen.max_new_tokens = 250 leaves 6 of the model's 256 positions for a prompt, and data.prompt_template alone takes"
  COMMAND $<TARGET_FILE:summarize> train --set eval.rouge_samples=4 --set gen.max_new_tokens=250
          --set model.n_layer=1 --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/rouge-room
          --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
tandem_e2e_test(summarize_split_seed_minus_one STATUS 2
  MATCH "train.seed = -1 draws a new seed at every start, so a resumed run, eval and predict would hold out other rows of .*dialogues.csv for validation"
  COMMAND $<TARGET_FILE:summarize> train --set data.train_csv=${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv
          --set train.seed=-1 --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/seed-minus-one)
# A tokenizer folder without a vocabulary, and a tiktoken file that is not one.
tandem_e2e_test(summarize_missing_tokenizer STATUS 2
  MATCH "tokenizer.dir '${CMAKE_CURRENT_BINARY_DIR}/no-vocab' does not exist: run env/tokenizer.sh.*gpt2.tiktoken"
  COMMAND $<TARGET_FILE:summarize> tokenize --text-file ${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv
          --set tokenizer.dir=${CMAKE_CURRENT_BINARY_DIR}/no-vocab)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bad-vocab/gpt2.tiktoken "IQ== 0\nnot base64\n")
tandem_e2e_test(summarize_corrupt_tiktoken STATUS 2
  MATCH "bad-vocab/gpt2.tiktoken:2: expected \"<base64 token> <rank>\""
  COMMAND $<TARGET_FILE:summarize> tokenize --text-file ${CMAKE_CURRENT_LIST_DIR}/e2e/dialogues.csv
          --set tokenizer.dir=${CMAKE_CURRENT_BINARY_DIR}/bad-vocab)
if(EXISTS ${SCITLDR}/train.csv)
  tandem_e2e_test(summarize_scitldr_submission STATUS 0 TIMEOUT 900
    MATCH "submission: 618 rows"
    COMMAND ${MPIRUN2} $<TARGET_FILE:summarize> --set data.train_csv=${SCITLDR}/train.csv
            --set data.val_csv=${SCITLDR}/validation.csv --set data.test_csv=${SCITLDR}/test.csv
            --set model.preset=tiny --set train.max_steps=4 --set train.grad_accum=1
            --set train.micro_batch=4 --set train.warmup_steps=1 --set gen.max_new_tokens=8
            --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/summarize-scitldr
            --set data.cache_dir=${CMAKE_CURRENT_BINARY_DIR}/token-cache)
else()
  message(STATUS "summarize_scitldr_submission skipped: ${SCITLDR} is absent")
endif()
# ZeRO-2's clipping norm and weights against the unsharded run's, on the
# tiny GPT (SciTLDR where ../shared/data has it, else the demo dialogues).
add_test(NAME summarize_shard_norm
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/shard_norm.sh $<TARGET_FILE:summarize> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/shard-norm ${SCITLDR})
set_tests_properties(summarize_shard_norm PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS "summarize;e2e"
                     TIMEOUT 600)
# LoRA as users run it: adapters alone in every file, resumed bit for bit,
# evaluated and exported; another base, an unknown target, rank 0 and LoRA
# without a base stop at the door.
add_test(NAME summarize_lora
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/lora.sh $<TARGET_FILE:summarize> $<TARGET_FILE:compare_runs>
                 ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/lora)
set_tests_properties(summarize_lora PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS "summarize;e2e" TIMEOUT 600)
tandem_e2e_test(summarize_batching_unknown STATUS 2
  MATCH "data.batching must be one of random\\|grouped\\|packed, got \"sorted\""
  COMMAND $<TARGET_FILE:summarize> train --set data.batching=sorted
          --set train.out_dir=${CMAKE_CURRENT_BINARY_DIR}/batching-unknown)
# data.batching: "grouped" micro-batches and "packed" sequences on 2 ranks
# learn what the step's rows as one micro-batch on 1 rank do, with less
# padding.
add_test(NAME summarize_batching
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/e2e/batching.sh $<TARGET_FILE:summarize> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/batching ${SCITLDR})
set_tests_properties(summarize_batching PROPERTIES ENVIRONMENT "${TANDEM_MPI_ENV}" LABELS "summarize;e2e"
                     TIMEOUT 600)
