#pragma once
// Logging for many ranks: rank 0 speaks on the console, every rank writes its
// own file (run_dir/logs/rank-N.log), and errors reach the console from any
// rank, since the rank that fails is often not rank 0. The console is stderr,
// as with Python's logging and tqdm: stdout carries only what a command
// outputs (generated text, token ids, scores), so that it can be piped.
#include <sstream>
#include <string>

namespace tandem::log {

enum class Level { Debug, Info, Warn, Error };

// Before init, messages go to the console as if from rank 0.
void init(int rank);
// Appends to this rank's file from now on; creates missing directories.
void open_file(const std::string& path);
void close_file();
void write(Level level, const std::string& message);

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <class... Args>
void debug(const Args&... a) {
  write(Level::Debug, cat(a...));
}
template <class... Args>
void info(const Args&... a) {
  write(Level::Info, cat(a...));
}
template <class... Args>
void warn(const Args&... a) {
  write(Level::Warn, cat(a...));
}
template <class... Args>
void error(const Args&... a) {
  write(Level::Error, cat(a...));
}

}  // namespace tandem::log
