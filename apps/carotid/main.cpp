// apps/carotid: classify persons from folders of ultrasound images and an
// Excel label sheet. Five commands: `train` (the default: a model, its test
// report), `cv` (person-level cross-validation, a fold per job or all in
// one), `cv-report` (the report of folds run as separate jobs), `predict`
// (a model or a cross-validation's ensemble on new images) and `plot`
// (charts of a run's metrics.jsonl).
#include <iostream>
#include <sstream>
#include <vector>

#include "app/commands.h"
#include "keys.h"
#include "tandem/commands.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/plot.h"
#include "tandem/program.h"

namespace {

// plot takes a folder, not the job's keys: it is run before the command line
// is parsed, and its entry here is for --help and the list of commands.
int plot_out_of_place(tandem::World&, const tandem::Config&) {
  throw tandem::UsageError("plot must come first: apps/carotid plot RUN_DIR");
}

const std::vector<tandem::Command>& commands() {
  static const std::vector<tandem::Command> table = {
      {"train", "--root-dir DIR --label-excel label.xlsx [--epochs 50 ...] (the default)", carotid::run_train, true},
      {"cv", "--folds 5 [--fold K --run-dir CV] [train options]: person-level cross-validation", carotid::run_cv, true},
      {"cv-report", "--run-dir CV: the report of a cross-validation whose folds ran as separate jobs",
       carotid::run_cv_report},
      {"plan", "[--gpus t4x2] [--shard all] [--data]: will the job fit; its memory plan a rank, before it runs",
       carotid::run_plan},
      {"predict", "--model RUN/models/best_model.h5 --input DIR [--labels FILE]", carotid::run_predict},
      {"plot", "RUN_DIR: charts of metrics.jsonl", plot_out_of_place}};
  return table;
}

int run(tandem::World& world, int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "plot")
    return world.is_main() ? tandem::plot_command(argc - 1, argv + 1, std::cout) : tandem::kExitOk;
  const auto schema = carotid::carotid_schema();
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(
      argc, argv, schema,
      "apps/carotid [COMMAND] [options]\n"
      "Patient-level image classification: a folder per person, labels in an .xlsx sheet.\n" +
          tandem::commands_help(commands()),
      world.is_main() ? std::cout : quiet);
  if (cli.help) return tandem::kExitOk;
  return tandem::run_command(tandem::find_command(commands(), cli.positional, "train"), world, cli.config);
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
