#pragma once
// A program's subcommands as one table: dispatch, the --help listing and the
// error for an unknown name all read it, so they cannot disagree.
#include <functional>
#include <string>
#include <vector>

namespace tandem {

class World;
class Config;

struct Command {
  std::string name;
  std::string help;  // what it does, for --help; further lines are indented under it
  std::function<int(World&, const Config&)> run;
  // A training command: SIGUSR1/SIGTERM end it in a checkpoint and a requeue
  // (install_preemption_handlers before it runs, so even data preparation is
  // covered). Others just stop.
  bool checkpoints_on_signal = false;
};

// The command that `positional` names; with none given, `fallback` (a name in
// the table) or, when that is empty, a UsageError. An unknown name or a second
// positional argument is a UsageError that lists every command.
const Command& find_command(const std::vector<Command>& commands, const std::vector<std::string>& positional,
                            const std::string& fallback = "");

// The --help listing: a line per command, its help aligned after the name.
std::string commands_help(const std::vector<Command>& commands);

// Runs the command found, after applying the config's dist.timeout_s and
// dist.setup_timeout_s to the world and installing the preemption handlers
// when it checkpoints on a signal; ends it in a setup barrier, since its last
// work is often one rank's.
int run_command(const Command& command, World& world, const Config& config);

}  // namespace tandem
