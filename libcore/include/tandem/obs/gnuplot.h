#pragma once
// Drawing charts with gnuplot (Debian gnuplot-nox), run as a program on a
// script file: the run's charts (obs/plot.h) and an app's report figures.
#include <string>

namespace tandem {

// A gnuplot string literal: single quotes, which take no escapes but a
// doubled quote, so any path or title is safe inside a script.
std::string gnuplot_quoted(const std::string& text);

// Runs `gnuplot SCRIPT`, its output going to `log`. Throws std::runtime_error
// saying how to install gnuplot when it is missing, and with the end of the
// log when it fails.
void run_gnuplot(const std::string& script, const std::string& log);

}  // namespace tandem
