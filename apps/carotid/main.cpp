// apps/carotid: classify persons from folders of ultrasound images and an
// Excel label sheet; `train` (the default) and `predict`.
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "keys.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/plot.h"
#include "tandem/program.h"
#include "tandem/train/preemption.h"

namespace {

int run(tandem::World& world, int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "plot")
    return world.is_main() ? tandem::plot_command(argc - 1, argv + 1, std::cout) : tandem::kExitOk;
  const auto schema = carotid::carotid_schema();
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(
      argc, argv, schema,
      "apps/carotid [train|predict|plot] [options]\n"
      "Patient-level image classification: a folder per person, labels in an .xlsx sheet.\n"
      "  train:   apps/carotid --root-dir DIR --label-excel label.xlsx [--epochs 50 ...]\n"
      "  predict: apps/carotid predict --model RUN/models/best_model.h5 --input DIR [--labels FILE]\n"
      "  plot:    apps/carotid plot RUN_DIR (charts of metrics.jsonl)",
      world.is_main() ? std::cout : quiet);
  if (cli.help) return tandem::kExitOk;
  const std::string name = cli.positional.empty() ? "train" : cli.positional.front();
  if (cli.positional.size() > 1)
    throw tandem::UsageError("unexpected argument '" + cli.positional[1] + "'");
  if (name == "train") {
    // A preemption signal while images are decoded must still end in a
    // checkpoint and a requeue, not a dead job.
    tandem::install_preemption_handlers();
    return carotid::run_train(world, cli.config);
  }
  if (name == "predict") return carotid::run_predict(world, cli.config);
  throw tandem::UsageError("unknown command '" + name + "': expected train, predict or plot");
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
