#include "tandem/config/load.h"

// TOML++ compiled into this file rather than taken from Debian's libtomlplusplus:
// that library is built with the C++11 std::string ABI, and a LibTorch built with
// the old one (_GLIBCXX_USE_CXX11_ABI=0, as older pip wheels are) puts this file
// on the old ABI, where the shared library's symbols do not match.
#undef TOML_SHARED_LIB
#undef TOML_HEADER_ONLY
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "coerce.h"
#include "tandem/error.h"

namespace tandem {
namespace {

// nullopt for arrays no Value can hold: mixed, nested, of booleans or tables.
std::optional<Value> list_value(const toml::array& array) {
  // An empty list has no element type; coerce() gives it the key's.
  if (array.empty() || array.is_homogeneous(toml::node_type::integer)) {
    std::vector<int64_t> ints;
    for (const toml::node& item : array) ints.push_back(*item.value<int64_t>());
    return ints;
  }
  if (array.is_homogeneous(toml::node_type::string)) {
    std::vector<std::string> strings;
    for (const toml::node& item : array) strings.push_back(*item.value<std::string>());
    return strings;
  }
  const bool numbers = std::all_of(array.begin(), array.end(), [](const toml::node& n) { return n.is_number(); });
  if (!numbers) return std::nullopt;
  std::vector<double> doubles;
  for (const toml::node& item : array) doubles.push_back(*item.value<double>());
  return doubles;
}

std::optional<Value> to_value(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::boolean:
      return Value(*node.value<bool>());
    case toml::node_type::integer:
      return Value(*node.value<int64_t>());
    case toml::node_type::floating_point:
      return Value(*node.value<double>());
    case toml::node_type::string:
      return Value(*node.value<std::string>());
    case toml::node_type::array:
      return list_value(*node.as_array());
    default:
      return std::nullopt;
  }
}

// "table", "date 2024-01-01", "array [ 1, 'a' ]".
std::string describe(const toml::node& node) {
  std::ostringstream out;
  out << node.type();
  if (!node.is_table()) {
    out << ' ';
    node.visit([&out](const auto& n) { out << n; });
  }
  return out.str();
}

Value read_node(const KeySpec& spec, const toml::node& node, const std::string& where) {
  std::optional<Value> value = to_value(node);
  if (!value) config_detail::throw_type_error(spec, describe(node), where);
  config_detail::coerce(spec, *value, where);
  return *value;
}

Value read_text(const KeySpec& spec, const std::string& text, const std::string& where) {
  toml::table doc;
  try {
    doc = toml::parse("v = " + text);
  } catch (const toml::parse_error&) {
    // Not a TOML value: only a string key can still use it, literally.
  }
  // Exactly one value; text like "1\nx = 2" smuggles in more.
  const toml::node* node = doc.size() == 1 ? doc.get("v") : nullptr;
  // A bare word: a string key's value, or a word an int key takes ("auto").
  if ((spec.type() == KeyType::String || config_detail::is_word(spec, Value(text))) && !(node && node->is_string())) {
    Value literal = text;
    config_detail::coerce(spec, literal, where);
    return literal;
  }
  if (!node) config_detail::throw_type_error(spec, "'" + text + "'", where);
  return read_node(spec, *node, where);
}

void assign(Config& config, const std::string& key, const std::string& text, const std::string& where,
            const std::string& source) {
  const Schema& schema = config.schema();
  if (!schema.has(key)) throw UsageError(where + ": " + schema.unknown_key_message(key));
  config.set(key, read_text(schema.at(key), text, where), source);
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

struct Leaf {
  std::string key;
  const toml::node* node;
  toml::source_position at;
};

// A table that is not itself a key holds more keys; anything else is a leaf
// for the schema to judge.
void collect(const toml::table& table, const std::string& prefix, const Schema& schema, std::vector<Leaf>& leaves) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (node.is_table() && !schema.has(key)) {
      collect(*node.as_table(), key, schema, leaves);
    } else {
      leaves.push_back({key, &node, name.source().begin});
    }
  }
}

std::string read_file(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw UsageError("config file '" + path + "' not found");
  }
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UsageError("config file '" + path + "' is not a regular file");
  }
  std::ifstream file(path, std::ios::binary);
  std::string text(std::istreambuf_iterator<char>(file), {});
  if (!file.is_open() || file.bad()) throw UsageError("config file '" + path + "' cannot be read");
  return text;
}

// `stored`: text an earlier run wrote (a model file's config), where keys the
// program has retired since are passed over rather than refused.
void merge(Config& config, const std::string& text, const std::string& path, bool stored) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const toml::source_position at = e.source().begin;
    throw UsageError(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
                     std::string(e.description()));
  }
  const Schema& schema = config.schema();
  std::vector<Leaf> leaves;
  collect(root, "", schema, leaves);
  // Tables iterate by name; report problems in the order the file has them.
  std::sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
    return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
  });
  for (const Leaf& leaf : leaves) {
    const std::string where = path + ":" + std::to_string(leaf.at.line);
    if (stored && schema.retired(leaf.key)) continue;
    if (!schema.has(leaf.key)) throw UsageError(where + ": " + schema.unknown_key_message(leaf.key));
    config.set(leaf.key, read_node(schema.at(leaf.key), *leaf.node, where), where);
  }
}

}  // namespace

void merge_file(Config& config, const std::string& path) { merge(config, read_file(path), path, false); }

void merge_text(Config& config, const std::string& text, const std::string& name) { merge(config, text, name, true); }

void apply_set(Config& config, const std::string& assignment) {
  const std::string where = "--set " + assignment;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw UsageError(where + ": expected KEY=VALUE, e.g. --set train.lr=3e-4");
  }
  assign(config, trim(assignment.substr(0, eq)), trim(assignment.substr(eq + 1)), where, "--set");
}

void apply_value(Config& config, const std::string& key, const std::string& text, const std::string& source) {
  assign(config, key, text, source + " " + text, source);
}

Config load_config(const Schema& schema, const std::string& path, const std::vector<std::string>& sets) {
  Config config(schema);
  if (!path.empty()) merge_file(config, path);
  for (const std::string& assignment : sets) apply_set(config, assignment);
  return config;
}

}  // namespace tandem
