// tandem-plot: charts of a run (loss, learning rate, throughput) from its
// metrics.jsonl, without MPI, so it runs on a login node beside a live job.
#include <exception>
#include <iostream>

#include "tandem/error.h"
#include "tandem/obs/plot.h"

int main(int argc, char** argv) {
  try {
    return tandem::plot_command(argc, argv, std::cout);
  } catch (const tandem::UsageError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return tandem::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return tandem::kExitFailure;
  }
}
