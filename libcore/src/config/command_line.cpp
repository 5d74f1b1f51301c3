#include "tandem/config/command_line.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>

#include "coerce.h"
#include "nearest.h"
#include "tandem/config/load.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace tandem {
namespace {

std::string column(const std::string& text, size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ') + "  ";
}

std::string keys_help(const Schema& schema) {
  size_t key_width = 0;
  size_t default_width = 0;
  for (const KeySpec& spec : schema.keys()) {
    key_width = std::max(key_width, spec.key.size());
    // A long list default must not push every doc off the screen.
    default_width = std::max(default_width, std::min<size_t>(to_toml_literal(spec.default_value).size(), 24));
  }
  std::string out = "Keys, set in the --config file or with --set KEY=VALUE:\n";
  for (const KeySpec& spec : schema.keys()) {
    std::string doc = spec.doc;
    if (!spec.choices.empty()) doc += (doc.empty() ? "" : " ") + config_detail::choices_note(spec);
    out += "  " + column(spec.key, key_width) + column(type_name(spec.type()), 8) +
           column(to_toml_literal(spec.default_value), default_width) + doc + "\n";
  }
  return out;
}

// "-3" and "-.5" are values (a positional or an option's), not flags.
bool looks_like_flag(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) && arg[1] != '.';
}

std::string unknown_flag_message(const std::string& arg, const std::vector<std::string>& flags, const Schema& schema) {
  const std::string flag = arg.substr(0, arg.find('='));
  const std::string message = "unknown option '" + flag + "'";
  const std::string key = flag.substr(std::min(flag.find_first_not_of('-'), flag.size()));
  if (schema.has(key)) return message + " (to set that key, use --set " + key + "=VALUE)";
  const std::string near = config_detail::closest(flag, flags);
  if (!near.empty()) return message + " (did you mean '" + near + "'?)";
  return message + " (see --help)";
}

// CLI11 only fails here on an option left without its value; say so plainly.
std::string cli_error(const CLI::ParseError& error, const CLI::App& app) {
  const std::string what = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    for (const CLI::Option* option : app.get_options()) {
      const std::string name = option->get_name();
      if (what.rfind(name + ":", 0) == 0) return "option '" + name + "' needs a value";
    }
  }
  return what;
}

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv, const Schema& schema, const std::string& about,
                               std::ostream& help_out) {
  CLI::App app{about};
  // Unknown flags are reported by us, with a suggestion; positionals are the caller's.
  app.allow_extras();
  // A plain flag instead of CLI11's, which would end the parse by throwing.
  app.set_help_flag();
  // A named const string: under C++20 CLI11 2.3 cannot tell a string literal
  // description from a flag's result variable.
  const std::string help_doc = "print this help, with every key, and exit";
  const CLI::Option* help = app.add_flag("-h,--help", help_doc);
  const CLI::Option* config_file = app.add_option("--config", "TOML job file; its keys override the defaults")
                                       ->type_name("FILE")
                                       ->expected(1)
                                       ->take_all();
  const CLI::Option* set = app.add_option("--set", "override one key, e.g. --set train.lr=3e-4 (repeatable)")
                               ->type_name("KEY=VALUE")
                               ->expected(1)
                               ->take_all();
  std::vector<std::string> flags = {"--config", "--set", "--help"};
  std::map<const CLI::Option*, const AliasSpec*> aliases;
  for (const AliasSpec& alias : schema.aliases()) {
    const KeySpec& spec = schema.at(alias.key);
    const std::string doc = "= " + alias.key + ": " + (alias.doc.empty() ? spec.doc : alias.doc);
    const CLI::Option* option =
        spec.type() == KeyType::Bool
            ? app.add_flag(alias.flag, doc)
            : app.add_option(alias.flag, doc)->type_name(upper_text(type_name(spec.type())))->expected(1)->take_all();
    aliases[option] = &alias;
    flags.push_back(alias.flag);
  }
  app.footer(keys_help(schema));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    throw UsageError(cli_error(error, app));
  }

  CommandLine result{Config(schema), {}, false};
  std::vector<std::string> unknown;
  bool after_dashes = false;
  for (const std::string& arg : app.remaining()) {
    if (!after_dashes && arg == "--") {
      after_dashes = true;
    } else if (!after_dashes && looks_like_flag(arg)) {
      unknown.push_back(arg);
    } else {
      result.positional.push_back(arg);
    }
  }
  if (help->count() > 0) {
    help_out << app.help();
    result.help = true;
    return result;
  }
  if (!unknown.empty()) throw UsageError(unknown_flag_message(unknown.front(), flags, schema));
  if (config_file->count() > 1) throw UsageError("--config given more than once");
  if (config_file->count() == 1) merge_file(result.config, config_file->results().front());

  // Overrides apply in command-line order, so with `--batch-size 4 --set
  // train.micro_batch=8` the later one wins, as it reads.
  std::map<const CLI::Option*, size_t> used;
  for (const CLI::Option* option : app.parse_order()) {
    const std::string& text = option->results()[used[option]++];
    if (option == set) {
      apply_set(result.config, text);
    } else if (const auto alias = aliases.find(option); alias != aliases.end()) {
      apply_value(result.config, alias->second->key, text, alias->second->flag);
    }
  }
  return result;
}

CommandLine parse_command_line(int argc, const char* const* argv, const Schema& schema, const std::string& about) {
  return parse_command_line(argc, argv, schema, about, std::cout);
}

}  // namespace tandem
