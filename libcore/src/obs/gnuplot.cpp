#include "tandem/obs/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace tandem {
namespace {

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  constexpr size_t kMax = 1000;
  return text.size() <= kMax ? text : "..." + text.substr(text.size() - kMax);
}

}  // namespace

std::string gnuplot_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void run_gnuplot(const std::string& script, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string program = "gnuplot", script_arg = script;
  char* argv[] = {program.data(), script_arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT)
    throw std::runtime_error(
        "gnuplot is not installed (not found on PATH): install gnuplot-nox, e.g. "
        "`apt-get install gnuplot-nox` (env/setup.sh does)");
  if (rc != 0) throw std::runtime_error(std::string("cannot start gnuplot: ") + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waiting for gnuplot: ") + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                            : "was killed by signal " + std::to_string(WTERMSIG(status));
  throw std::runtime_error("gnuplot " + how + ":\n" + tail_of(log));
}

}  // namespace tandem
