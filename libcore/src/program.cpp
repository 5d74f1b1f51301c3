#include "tandem/obs/tensor_memory.h"
#include "tandem/program.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/host_memory.h"
#include "tandem/obs/log.h"

namespace tandem {
namespace {

// The exception report_error printed: the same object reaches fail() when
// it was rethrown with `throw;` (its text too, should another take its address).
const std::exception* reported = nullptr;
std::string reported_what;

bool was_reported(const std::exception& e) { return &e == reported && reported_what == e.what(); }

void print_error(const World& world, const char* what) {
  if (world.rank() == 0)
    std::cerr << "error: " << what << std::endl;
  else
    std::cerr << "error (rank " << world.rank() << "): " << what << std::endl;
}

[[noreturn]] void fail(const World& world, const std::exception& e, int status) {
  const char* what = e.what();
  if (!was_reported(e)) print_error(world, what);
  log::write(log::Level::Debug, std::string("exiting with status ") + std::to_string(status) + ": " + what);
  log::close_file();
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace

int run_program(int argc, char** argv, const std::function<int(World&, int, char**)>& body) {
  keep_freed_host_memory();
  count_cpu_tensors();
  World world(argc, argv);
  try {
    if (const std::string why = launcher_disagrees(world.size()); !why.empty()) throw UsageError(why);
    return body(world, argc, argv);
  } catch (const UsageError& e) {
    fail(world, e, kExitUsage);
  } catch (const JobEnding& e) {
    fail(world, e, kExitWatchdog);
  } catch (const std::exception& e) {
    fail(world, e, kExitFailure);
  }
}

void report_error(const World& world, const std::exception& e) {
  if (was_reported(e)) return;
  print_error(world, e.what());
  std::fflush(nullptr);
  reported = &e;
  reported_what = e.what();
}

}  // namespace tandem
