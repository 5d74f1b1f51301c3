#include <ostream>

#include "tandem/error.h"
#include "tandem/obs/plot.h"

namespace tandem {

int plot_command(int argc, char** argv, std::ostream& out) {
  const std::string name = argc > 0 ? argv[0] : "tandem-plot";
  const std::string usage = "usage: " + name + " RUN_DIR [--out DIR]";
  std::string run_dir, out_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out << usage << "\n"
          << "Draws RUN_DIR/metrics.jsonl (loss, lr, throughput, grad norm, eval_* metrics)\n"
          << "as PNG files in RUN_DIR/plots, or in DIR with --out. Needs gnuplot.\n";
      return kExitOk;
    }
    if (arg == "--out") {
      if (i + 1 == argc) throw UsageError("--out needs a directory; " + usage);
      out_dir = argv[++i];
    } else if (arg.rfind("--out=", 0) == 0) {
      out_dir = arg.substr(6);
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "'; " + usage);
    } else if (run_dir.empty()) {
      run_dir = arg;
    } else {
      throw UsageError("one RUN_DIR only, got '" + run_dir + "' and '" + arg + "'; " + usage);
    }
  }
  if (run_dir.empty()) throw UsageError("no RUN_DIR given; " + usage);
  for (const auto& path : plot_run(run_dir, out_dir)) out << path << "\n";
  return kExitOk;
}

}  // namespace tandem
