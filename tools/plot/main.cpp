// tandem-plot: charts of a run (loss, learning rate, throughput) from its
// metrics.jsonl, without MPI, so it runs on a login node beside a live job.
#include <iostream>

#include "tandem/local_program.h"
#include "tandem/obs/plot.h"

int main(int argc, char** argv) {
  return tandem::run_local_program([&] { return tandem::plot_command(argc, argv, std::cout); });
}
