#include "tandem/obs/log.h"

#include <sys/time.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

namespace tandem::log {
namespace {

std::mutex g_mu;
int g_rank = 0;
std::ofstream g_file;

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
}

void close_file() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_file.close();
}

void write(Level level, const std::string& message) {
  const std::string line = timestamp() + " r" + std::to_string(g_rank) + " " + level_name(level) + " " + message;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file.is_open()) g_file << line << '\n' << std::flush;
  const bool console = level == Level::Error || (g_rank == 0 && level != Level::Debug);
  if (console) std::cerr << line << std::endl;
}

}  // namespace tandem::log
