#include "tandem/commands.h"

#include <algorithm>

#include "tandem/dist/dist_keys.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/train/preemption.h"

namespace tandem {
namespace {

// "a, b or c", in the table's order.
std::string names_of(const std::vector<Command>& commands) {
  std::string out;
  for (size_t i = 0; i < commands.size(); ++i)
    out += (i == 0 ? "" : i + 1 == commands.size() ? " or " : ", ") + commands[i].name;
  return out;
}

}  // namespace

const Command& find_command(const std::vector<Command>& commands, const std::vector<std::string>& positional,
                            const std::string& fallback) {
  if (positional.empty() && fallback.empty()) throw UsageError("no command: expected " + names_of(commands));
  const std::string name = positional.empty() ? fallback : positional.front();
  const auto it = std::find_if(commands.begin(), commands.end(), [&](const Command& c) { return c.name == name; });
  if (it == commands.end()) throw UsageError("unknown command '" + name + "': expected " + names_of(commands));
  if (positional.size() > 1) throw UsageError("unexpected argument '" + positional[1] + "' after " + name);
  return *it;
}

std::string commands_help(const std::vector<Command>& commands) {
  size_t width = 0;
  for (const auto& c : commands) width = std::max(width, c.name.size());
  std::string out = "Commands:";
  for (const auto& c : commands) {
    std::string help = c.help;
    const std::string indent = "\n" + std::string(width + 4, ' ');
    for (size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + indent.size()))
      help.replace(at, 1, indent);
    out += "\n  " + c.name + std::string(width - c.name.size() + 2, ' ') + help;
  }
  return out;
}

int run_command(const Command& command, World& world, const Config& config) {
  // From here every collective of every command is held to the job's limits,
  // not only the Trainer's.
  const DistKeys dist = dist_settings(config);
  world.set_limits(dist.timeout_s, dist.setup_timeout_s);
  if (command.checkpoints_on_signal) install_preemption_handlers();
  const int status = command.run(world, config);
  // A command's last work is often rank 0's alone (a report, an export, a
  // submission): the others wait for it as for set-up, not as for a
  // collective, before the shut-down holds them to dist.timeout_s.
  if (world.size() > 1) world.setup_barrier("every rank to finish '" + command.name + "'");
  return status;
}

}  // namespace tandem
