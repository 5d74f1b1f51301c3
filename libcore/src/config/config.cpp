#include "tandem/config/config.h"

#include <algorithm>
#include <stdexcept>

#include "coerce.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"

namespace tandem {
namespace {

// "train.opt.lr" is `lr` in the table [train.opt]; "seed" is in the root table "".
std::string table_of(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

}  // namespace

Config::Config(const Schema& schema) : schema_(std::make_shared<const Schema>(schema)) {
  for (const KeySpec& spec : schema_->keys()) entries_[spec.key] = {spec.default_value, "default"};
}

const Config::Entry& Config::entry(const std::string& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) {
    const std::string near = schema_->nearest(key);
    throw std::logic_error("config key '" + key + "' is not declared in the schema" +
                           (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  return it->second;
}

template <class T>
const T& Config::typed(const std::string& key, KeyType type) const {
  const Value& value = entry(key).value;
  if (type_of(value) != type) {
    throw std::logic_error("config key '" + key + "' is " + type_name(type_of(value)) + ", read as " + type_name(type));
  }
  return std::get<T>(value);
}

bool Config::get_bool(const std::string& key) const { return typed<bool>(key, KeyType::Bool); }

int64_t Config::get_int(const std::string& key) const { return typed<int64_t>(key, KeyType::Int); }

double Config::get_double(const std::string& key) const { return typed<double>(key, KeyType::Float); }

std::string Config::get_string(const std::string& key) const { return typed<std::string>(key, KeyType::String); }

std::vector<int64_t> Config::get_int_list(const std::string& key) const {
  return typed<std::vector<int64_t>>(key, KeyType::IntList);
}

std::vector<double> Config::get_double_list(const std::string& key) const {
  return typed<std::vector<double>>(key, KeyType::FloatList);
}

std::vector<std::string> Config::get_string_list(const std::string& key) const {
  return typed<std::vector<std::string>>(key, KeyType::StringList);
}

const Value& Config::get(const std::string& key) const { return entry(key).value; }

void Config::set(const std::string& key, Value value, std::string source) {
  if (!schema_->has(key)) throw UsageError(source + ": " + schema_->unknown_key_message(key));
  config_detail::coerce(schema_->at(key), value, source);
  entries_[key] = {std::move(value), std::move(source)};
}

const std::string& Config::source(const std::string& key) const { return entry(key).source; }

std::string Config::to_toml() const {
  // Root keys must come before the first [table] header, or TOML puts them in it.
  std::vector<std::string> tables = {""};
  for (const KeySpec& spec : schema_->keys()) {
    const std::string table = table_of(spec.key);
    if (std::find(tables.begin(), tables.end(), table) == tables.end()) tables.push_back(table);
  }
  std::string out;
  for (const std::string& table : tables) {
    if (!table.empty()) out += (out.empty() ? "[" : "\n[") + table + "]\n";
    for (const KeySpec& spec : schema_->keys()) {
      if (table_of(spec.key) != table) continue;
      std::string doc = spec.doc;
      for (size_t at = doc.find('\n'); at != std::string::npos; at = doc.find('\n', at + 3)) {
        doc.replace(at, 1, "\n# ");
      }
      if (!spec.choices.empty()) doc += (doc.empty() ? "" : " ") + config_detail::choices_note(spec);
      if (!doc.empty()) out += "# " + doc + "\n";
      const Entry& e = entries_.at(spec.key);
      // A root key has no dot, and npos + 1 wraps to 0: it is written whole.
      out += spec.key.substr(spec.key.rfind('.') + 1) + " = " + to_toml_literal(e.value);
      if (e.source != "default") out += "  # " + e.source;
      out += "\n";
    }
  }
  return out;
}

void Config::write(const std::string& path) const {
  write_bytes_atomically(path, to_toml());
}

}  // namespace tandem
