#pragma once
// What eval, predict and a whole run write from a model: eval.json and the
// console's report (ROUGE on the validation examples against the first-line
// baseline, with a few samples), and submission.csv for the test set.
#include "app/command_setup.h"

namespace summarize {

// The report for corpus.val when it has examples, the submission for
// corpus.test when it has; the process exit status.
int evaluate_and_predict(tandem::World& world, const tandem::Config& config, Placed& placed, const Gpt2Tokenizer& tok,
                         const Corpus& corpus);

}  // namespace summarize
