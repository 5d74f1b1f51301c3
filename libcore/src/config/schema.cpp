#include "tandem/config/schema.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "nearest.h"

namespace tandem {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Every dotted part must be a TOML bare key, so to_toml() can write it unquoted.
bool is_valid_key(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '.' ? key[i - 1] == '.' : !is_name_char(key[i])) return false;
  }
  return true;
}

bool is_valid_flag(const std::string& flag) {
  if (flag.size() == 2) return flag[0] == '-' && std::isalpha(static_cast<unsigned char>(flag[1]));
  if (flag.size() < 3 || flag.compare(0, 2, "--") != 0 || flag[2] == '-') return false;
  for (size_t i = 2; i < flag.size(); ++i) {
    if (!is_name_char(flag[i])) return false;
  }
  return true;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string last_part(const std::string& key) { return key.substr(key.rfind('.') + 1); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Schema& Schema::add(const std::string& key, Value default_value, std::string doc, std::vector<std::string> choices) {
  if (!is_valid_key(key)) {
    throw std::logic_error("config key '" + key + "' must be dotted names of [A-Za-z0-9_-]");
  }
  if (has(key)) throw std::logic_error("config key '" + key + "' declared twice");
  // TOML cannot hold both a value and a table under one name.
  for (const KeySpec& other : keys_) {
    if (starts_with(other.key, key + ".") || starts_with(key, other.key + ".")) {
      throw std::logic_error("config keys '" + other.key + "' and '" + key + "' collide");
    }
  }
  KeySpec spec{key, std::move(default_value), std::move(doc), std::move(choices)};
  if (!spec.choices.empty()) {
    std::vector<std::string> defaults;
    if (spec.type() == KeyType::String) {
      defaults = {std::get<std::string>(spec.default_value)};
    } else if (spec.type() == KeyType::StringList) {
      defaults = std::get<std::vector<std::string>>(spec.default_value);
    } else if (spec.type() != KeyType::Int) {
      throw std::logic_error("config key '" + key + "' has choices but is not a string or an integer");
    } else {
      // An int key's words must not read as numbers, or "1" would be two values.
      for (const std::string& w : spec.choices)
        if (w.empty() || !std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }))
          throw std::logic_error("config key '" + key + "' takes the word '" + w + "', which is not a word of letters");
    }
    for (const std::string& d : defaults) {
      if (std::find(spec.choices.begin(), spec.choices.end(), d) == spec.choices.end()) {
        throw std::logic_error("config key '" + key + "' default '" + d + "' is not a choice");
      }
    }
  }
  index_[key] = keys_.size();
  keys_.push_back(std::move(spec));
  return *this;
}

Schema& Schema::alias(const std::string& flag, const std::string& key, std::string doc) {
  if (!is_valid_flag(flag)) throw std::logic_error("alias '" + flag + "' is not a flag like --name");
  for (const char* reserved : {"-h", "--help", "--config", "--set"}) {
    if (flag == reserved) throw std::logic_error("alias '" + flag + "' is a built-in flag");
  }
  for (const AliasSpec& other : aliases_) {
    if (other.flag == flag) throw std::logic_error("alias '" + flag + "' declared twice");
  }
  if (!has(key)) throw std::logic_error("alias '" + flag + "' is for undeclared key '" + key + "'");
  aliases_.push_back({flag, key, std::move(doc)});
  return *this;
}

bool Schema::has(const std::string& key) const { return index_.count(key) > 0; }

const KeySpec& Schema::at(const std::string& key) const {
  const auto it = index_.find(key);
  if (it == index_.end()) {
    throw std::logic_error("config key '" + key + "' is not declared in the schema");
  }
  return keys_[it->second];
}

std::string Schema::nearest(const std::string& unknown) const {
  std::vector<std::string> names;
  for (const KeySpec& spec : keys_) names.push_back(spec.key);
  std::string near = config_detail::closest(unknown, names);
  if (!near.empty()) return near;
  // `lr` or `optim.lr` for `train.lr`: the right name in the wrong table.
  for (const KeySpec& spec : keys_) {
    if (last_part(spec.key) == last_part(unknown)) return spec.key;
  }
  return "";
}

Schema& Schema::retire(const std::string& key, std::string instead) {
  if (!is_valid_key(key) || has(key)) throw std::logic_error("cannot retire config key '" + key + "'");
  retired_[key] = std::move(instead);
  return *this;
}

std::string Schema::unknown_key_message(const std::string& unknown) const {
  const std::string message = "unknown key '" + unknown + "'";
  const auto retired = retired_.find(unknown);
  if (retired != retired_.end()) return message + " (" + retired->second + ")";
  const std::string near = nearest(unknown);
  if (!near.empty()) return message + " (did you mean '" + near + "'?)";
  const std::vector<std::string> inside = keys_under(unknown);
  if (!inside.empty()) return message + " ([" + unknown + "] is a table of " + join(inside) + ")";
  const size_t dot = unknown.rfind('.');
  if (dot != std::string::npos) {
    const std::string table = unknown.substr(0, dot);
    const std::vector<std::string> siblings = keys_under(table);
    if (!siblings.empty()) return message + " (keys in [" + table + "]: " + join(siblings) + ")";
  }
  return message + " (see --help for the valid keys)";
}

std::vector<std::string> Schema::keys_under(const std::string& table) const {
  std::vector<std::string> found;
  for (const KeySpec& spec : keys_) {
    if (starts_with(spec.key, table + ".")) found.push_back(spec.key);
  }
  return found;
}

}  // namespace tandem
