// apps/rouge: ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum of a submission
// against its references, as `summarize score` gives them, from a program
// that loads neither LibTorch nor MPI, so that scoring a file is a matter of
// milliseconds, as fit for a loop in a script as for one run.
//   apps/rouge --pred P.csv --ref R.csv [--stemmer]
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "rouge/score_command.h"
#include "tandem/error.h"
#include "tandem/local_program.h"

int main(int argc, char** argv) {
  CLI::App app("ROUGE of two id,summary CSV files (predictions, references), as one line of JSON", "rouge");
  std::string pred, ref;
  bool stemmer = false;
  app.add_option("--pred", pred, summarize::kScorePredDoc)->required();
  app.add_option("--ref", ref, summarize::kScoreRefDoc)->required();
  app.add_flag("--stemmer", stemmer, summarize::kScoreStemmerDoc);
  return tandem::run_local_program([&] {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
      return app.exit(help);
    } catch (const CLI::ParseError& error) {
      throw tandem::UsageError(std::string(error.what()) + " (see rouge --help)");
    }
    return summarize::score_command(pred, ref, stemmer, std::cout);
  });
}
