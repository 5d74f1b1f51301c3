#pragma once
// Charts of a run from its metrics.jsonl, drawn by gnuplot into PNGs: train
// and eval loss, learning rate, throughput, gradient norm, and one chart per
// other eval_* metric. Works on a run still going, so progress can be looked
// at from a login node while the job trains.
#include <iosfwd>
#include <string>
#include <vector>

namespace tandem {

// Draws what RUN_DIR/metrics.jsonl holds into out_dir (RUN_DIR/plots when
// empty) and returns the paths written. Each PNG is replaced whole, never
// left half-drawn. Throws UsageError when metrics.jsonl is missing, has a
// malformed line or no steps yet; std::runtime_error when gnuplot is not
// installed or fails.
std::vector<std::string> plot_run(const std::string& run_dir, const std::string& out_dir = "");

// `NAME RUN_DIR [--out DIR]`: the tandem-plot program, and any app's `plot`
// subcommand (pass the arguments after "plot", argv[0] naming the command).
// Prints the paths written to `out`; returns the exit status. Throws
// UsageError for bad arguments, as plot_run does.
int plot_command(int argc, char** argv, std::ostream& out);

}  // namespace tandem
