#include "tandem/obs/log.h"

#include <sys/time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

#include "tandem/io/stream_error.h"

namespace tandem::log {
namespace {

std::mutex g_mu;
int g_rank = 0;
std::ofstream g_file;
std::string g_path;
bool g_to_console = false;  // the log file failed: every rank's lines go to the console

const char* level_name(Level level) {
  switch (level) {
    case Level::Debug:
      return "DEBUG";
    case Level::Info:
      return "INFO ";
    case Level::Warn:
      return "WARN ";
    case Level::Error:
      return "ERROR";
  }
  return "?";
}

std::string timestamp() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  std::tm tm{};
  localtime_r(&tv.tv_sec, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03d", static_cast<int>(tv.tv_usec / 1000));
  return buf;
}

}  // namespace

void init(int rank) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_rank = rank;
}

void open_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  g_file.close();
  g_file.open(path, std::ios::app);
  g_path = path;
  g_to_console = false;
}

void close_file() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_file.close();
}

void write(Level level, const std::string& message) {
  const std::string line = timestamp() + " r" + std::to_string(g_rank) + " " + level_name(level) + " " + message;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file.is_open()) {
    errno = 0;
    g_file << line << '\n' << std::flush;
    // A full disk must not end a run that its checkpoints could still save,
    // nor pass unseen: the console gets the reason once and the lines from then on.
    if (!g_file) {
      std::cerr << timestamp() << " r" << g_rank << " WARN  " << g_path
                << ": cannot write (" << stream_error() << "); this rank logs to the console only"
                << std::endl;
      g_file.close();
      g_to_console = true;
    }
  }
  const bool console = level == Level::Error || ((g_rank == 0 || g_to_console) && level != Level::Debug);
  if (console) std::cerr << line << std::endl;
}

}  // namespace tandem::log
