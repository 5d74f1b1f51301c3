#pragma once
// Every program's command line: --config FILE, --set KEY=VALUE (repeatable), the
// schema's alias flags (--batch-size 4), -h/--help, and positional arguments
// (subcommands, paths) for the program itself.
#include <iosfwd>
#include <string>
#include <vector>

#include "tandem/config/config.h"

namespace tandem {

struct CommandLine {
  Config config;                        // defaults < --config file < overrides in order
  std::vector<std::string> positional;  // in order; all arguments after "--" land here
  bool help = false;                    // help was printed; the caller exits 0
};

// Throws UsageError for an unknown flag (naming the nearest), a missing value,
// --config given twice, and everything load.h rejects. With --help it prints the
// usage and every key (type, default, doc) to `help_out`, checks nothing else and
// returns the defaults with help set.
CommandLine parse_command_line(int argc, const char* const* argv, const Schema& schema, const std::string& about,
                               std::ostream& help_out);
// Help goes to stdout.
CommandLine parse_command_line(int argc, const char* const* argv, const Schema& schema, const std::string& about);

}  // namespace tandem
