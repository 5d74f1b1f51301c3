// envcheck: what `accelerate env` and `accelerate test` are for torch users.
// Without flags it reports the software and devices every rank sees; with
// --test it checks every collective on every rank and measures bandwidth.
#include <iostream>
#include <sstream>

#include "bandwidth.h"
#include "report.h"
#include "selftest.h"
#include "tandem/config/command_line.h"
#include "tandem/dist/communicator.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"

namespace {

tandem::Schema envcheck_schema() {
  tandem::Schema schema;
  tandem::add_dist_keys(schema);
  schema.add("envcheck.test", false, "check every collective for correctness, then print a bandwidth table");
  schema.add("envcheck.max_mb", int64_t{64}, "largest message of the --test sweeps, in MiB");
  schema.add("envcheck.iters", int64_t{20}, "timed repetitions per size in the bandwidth table");
  schema.alias("--test", "envcheck.test");
  return schema;
}

int run(tandem::World& world, int argc, char** argv) {
  const auto schema = envcheck_schema();
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(argc, argv, schema,
                                        "tandem envcheck: report the environment; --test checks collectives",
                                        world.rank() == 0 ? std::cout : quiet);
  if (cli.help) return 0;
  if (!cli.positional.empty())
    throw tandem::UsageError("envcheck takes no positional arguments, got '" + cli.positional.front() + "'");
  const auto& cfg = cli.config;
  const auto dist = tandem::dist_settings(cfg);
  const int64_t max_mb = cfg.get_int("envcheck.max_mb");
  const int64_t iters = cfg.get_int("envcheck.iters");
  if (max_mb < 1 || max_mb > 4096)
    throw tandem::UsageError("envcheck.max_mb must be between 1 and 4096, got " + std::to_string(max_mb));
  if (iters < 1) throw tandem::UsageError("envcheck.iters must be at least 1");
  world.watchdog().set_timeout(dist.timeout_s);

  tandem::Placement placement;
  try {
    placement = tandem::place_rank(world, dist.device, dist.backend);
  } catch (const tandem::UsageError&) {
    // A GPU the driver sees and LibTorch does not, for one: what each of
    // them reports is what the user needs beside the refusal.
    envcheck::print_report(world, tandem::Placement{});
    throw;
  }
  envcheck::print_report(world, placement);
  if (!cfg.get_bool("envcheck.test")) return 0;

  auto comm = tandem::make_communicator(world, placement);
  try {
    const int failures = envcheck::run_selftest(world, *comm, placement, max_mb);
    envcheck::print_bandwidth(world, *comm, placement, max_mb, iters);
    envcheck::print_node_bandwidth(world, max_mb, iters);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    // Before the communicator's teardown: see report_error.
    tandem::report_error(world, e);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
