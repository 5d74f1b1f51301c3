// envcheck: what `accelerate env` and `accelerate test` are for torch users.
// Without flags it reports the software and devices every rank sees; with
// --test it checks every collective on every rank and measures bandwidth.
#include <iostream>
#include <sstream>

#include "bandwidth.h"
#include "report.h"
#include "selftest.h"
#include "tandem/config/command_line.h"
#include "tandem/config/settings.h"
#include "tandem/dist/communicator.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"

namespace {

// The envcheck.* keys, each declared once (tandem/config/settings.h).
struct EnvcheckKeys {
  bool test = false;
  int64_t max_mb = 64, iters = 20;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("envcheck.test", k.test, "check every collective for correctness, then print a bandwidth table",
          tandem::any());
    visit("envcheck.max_mb", k.max_mb, "largest message of the --test sweeps, in MiB", tandem::in_range(1, 4096));
    visit("envcheck.iters", k.iters, "timed repetitions per size in the bandwidth table", tandem::at_least(1));
  }
};

tandem::Schema envcheck_schema() {
  tandem::Schema schema;
  tandem::add_dist_keys(schema);
  tandem::declare_keys<EnvcheckKeys>(schema);
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
  const EnvcheckKeys keys = tandem::read_keys<EnvcheckKeys>(cfg);
  const int64_t max_mb = keys.max_mb, iters = keys.iters;
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
  if (!keys.test) return 0;

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
