#include "h5_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "tandem/error.h"
#include "tandem/obs/log.h"

extern char** environ;

namespace tandem::h5 {
namespace {

using Identity = std::tuple<dev_t, ino_t, off_t, time_t, long>;

std::mutex g_mutex;
std::set<Identity> g_known;                   // walked, or written by this process
std::set<Identity> g_walked;                  // read whole by a walk that found nothing wrong
std::map<Identity, std::string> g_refused;    // what the walk of each damaged file said

std::optional<Identity> identity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return Identity{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

bool known(const Identity& id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_known.count(id) > 0;
}

void remember(const Identity& id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_known.insert(id);
}

// A damaged file met again (another reader of the same file, a retry) is
// refused with the same words, without waiting for another walk.
[[noreturn]] void refuse(const Identity& id, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_refused.emplace(id, message);
  }
  throw UsageError(message);
}

void refuse_again(const Identity& id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_refused.find(id);
  if (it != g_refused.end()) throw UsageError(it->second);
}

double stall_seconds() {
  const char* text = std::getenv("TANDEM_H5_STALL_S");
  if (text == nullptr || *text == '\0') return 60.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
    throw UsageError(std::string("TANDEM_H5_STALL_S must be a positive number of seconds, not '") + text + "'");
  }
  return seconds;
}

std::string walker() {
  const char* set = std::getenv("TANDEM_H5_WALK");
  return set != nullptr && *set != '\0' ? set : TANDEM_H5_WALK_PATH;
}

struct Walk {
  bool started = false;       // it wrote its first '.': it runs
  bool reported = false;      // it wrote '!': the damage it found follows
  std::string report;
  std::optional<int> status;  // the wait status; none when it went quiet for the stall time and was killed
  bool lost = false;          // the status could not be had
};

Walk run_walk(pid_t pid, int progress, double stall_s) {
  Walk walk;
  pollfd wanted{progress, POLLIN, 0};
  const int stall_ms = static_cast<int>(std::min(stall_s * 1000.0, 2.0e9));
  bool stalled = false;
  for (;;) {
    const int ready = poll(&wanted, 1, stall_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      stalled = true;
      kill(pid, SIGKILL);
      break;
    }
    char bytes[4096];
    const ssize_t n = read(progress, bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the walker has exited
    walk.started = true;
    std::string_view got(bytes, n);
    if (!walk.reported) {
      const size_t mark = got.find('!');
      if (mark == std::string_view::npos) continue;  // '.'s say only that it moves on
      walk.reported = true;
      got.remove_prefix(mark + 1);
    }
    walk.report.append(got);
  }
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  // With SIGCHLD ignored, the exit status is not kept (ECHILD): unknown.
  walk.lost = waited < 0;
  if (!stalled) walk.status = status;
  return walk;
}

// "signal 11, Segmentation fault" or "exit status 1"
std::string exit_text(int status) {
  if (!WIFSIGNALED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  const char* name = strsignal(WTERMSIG(status));
  return "signal " + std::to_string(WTERMSIG(status)) + (name != nullptr ? std::string(", ") + name : "");
}

// Said once for each cause: files are still read, unguarded, since the
// walker's absence says nothing about them.
void cannot_walk(const std::string& program, const std::string& why) {
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!said.insert(program + why).second) return;
  }
  log::warn(program, ": cannot run (", why,
            "): HDF5 files are read without first being walked in a separate process, so a file that crashes "
            "the HDF5 library crashes this program (TANDEM_H5_WALK names the build's libcore/tandem-h5walk)");
}

}  // namespace

void remember_written(const std::string& path) {
  if (const auto id = identity(path)) remember(*id);
}

void walk_first(const std::string& path) {
  const auto id = identity(path);
  if (!id || known(*id)) return;  // a missing file is named by the caller
  refuse_again(*id);
  const double stall_s = stall_seconds();
  std::string program = walker();

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot make a pipe: ") + strerror(errno));
  // The walker writes its progress to fd 3 and nothing else: its own output
  // would only be HDF5's or a sanitizer's report of the damage we name.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  // posix_spawn (vfork and exec, never a plain fork): a process that holds
  // MPI's registered memory, CUDA or OpenMP threads may not fork a copy of
  // itself that goes on running its code. Signals blocked on this thread
  // must not stay blocked in the walker.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  std::string fd = "3";
  char* argv[] = {program.data(), const_cast<char*>(path.c_str()), fd.data(), nullptr};
  // The walker's AddressSanitizer settings are its own (its exit status for
  // a finding, no leak report): a sanitizer build's ASAN_OPTIONS stay here.
  std::vector<char*> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "ASAN_OPTIONS=", 13) != 0) env.push_back(*entry);
  }
  env.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, &attributes, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    cannot_walk(program, strerror(spawned));
    return;
  }
  const Walk walk = run_walk(pid, pipe_fds[0], stall_s);
  close(pipe_fds[0]);

  const std::string walked = ", in tandem-h5walk, which reads each HDF5 file before this program does";
  if (walk.reported) refuse(*id, path + ": " + walk.report);
  if (!walk.status) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", stall_s);
    refuse(*id, path + ": damaged, or on a disk that stopped answering: the HDF5 library made no progress "
                     "reading it for " + seconds + " s (TANDEM_H5_STALL_S" + walked + ")");
  }
  if (walk.lost) {
    cannot_walk(program, std::string("its exit status is lost: ") + strerror(ECHILD));
    return;
  }
  if (!walk.started) {
    cannot_walk(program, "it exited before starting: " + exit_text(*walk.status));
    return;
  }
  if (WIFEXITED(*walk.status) && WEXITSTATUS(*walk.status) == kWalkMemoryError) {
    refuse(*id, path + ": damaged: reading it made the HDF5 library read or free memory it does not own "
                     "(caught by AddressSanitizer" + walked + ")");
  }
  if (WIFSIGNALED(*walk.status) || WEXITSTATUS(*walk.status) != 0) {
    refuse(*id, path + ": damaged: reading it crashed the HDF5 library (" + exit_text(*walk.status) + walked +
                     ")");
  }
  remember(*id);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_walked.insert(*id);
}

bool walked(const std::string& path) {
  const auto id = identity(path);
  std::lock_guard<std::mutex> lock(g_mutex);
  return id && g_walked.count(*id) > 0;
}

}  // namespace tandem::h5
