#include "tandem/program.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/host_memory.h"
#include "tandem/obs/log.h"

namespace tandem {
namespace {

[[noreturn]] void fail(const World& world, const char* what, int status) {
  if (world.rank() == 0)
    std::cerr << "error: " << what << std::endl;
  else
    std::cerr << "error (rank " << world.rank() << "): " << what << std::endl;
  log::write(log::Level::Debug, std::string("exiting with status ") + std::to_string(status) + ": " + what);
  log::close_file();
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace

int run_program(int argc, char** argv, const std::function<int(World&, int, char**)>& body) {
  keep_freed_host_memory();
  World world(argc, argv);
  try {
    if (const std::string why = launcher_disagrees(world.size()); !why.empty()) throw UsageError(why);
    return body(world, argc, argv);
  } catch (const UsageError& e) {
    fail(world, e.what(), kExitUsage);
  } catch (const std::exception& e) {
    fail(world, e.what(), kExitFailure);
  }
}

}  // namespace tandem
