#include "tandem/train/preemption.h"

#include <csignal>

namespace tandem {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

}  // namespace

void install_preemption_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // Restart interrupted system calls: file and MPI I/O in flight should finish.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool preemption_requested() { return g_signal != 0; }

int preemption_signal() { return g_signal; }

}  // namespace tandem
