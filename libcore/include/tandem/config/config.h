#pragma once
// A program's resolved settings: every schema key with its value and where the
// value came from. Layers, lowest first: defaults, the job file, then --set and
// alias flags in command-line order (see load.h and command_line.h).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/config/schema.h"

namespace tandem {

class Config {
 public:
  // Every key starts at its default.
  explicit Config(const Schema& schema);

  // Asking for an undeclared key, or with the wrong type, is a bug in the program:
  // these throw std::logic_error. A float key is read with get_double.
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_double_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;
  const Value& get(const std::string& key) const;

  // Validated like --set (UsageError naming `source` for an unknown key, a wrong
  // type or a value not among the choices), for programs that derive values.
  void set(const std::string& key, Value value, std::string source = "program");

  // Where the value came from: "default", "job.toml:12", "--set", "--batch-size".
  const std::string& source(const std::string& key) const;

  // The resolved values as a TOML job file, in schema order grouped by table, each
  // key under its doc as a comment, and overridden values marked with their source.
  // Loading it with the same schema gives the same values.
  std::string to_toml() const;
  // Writes to_toml() to `path`; std::runtime_error if that fails.
  void write(const std::string& path) const;

  const Schema& schema() const { return *schema_; }

 private:
  struct Entry {
    Value value;
    std::string source;
  };
  const Entry& entry(const std::string& key) const;
  template <class T>
  const T& typed(const std::string& key, KeyType type) const;

  std::shared_ptr<const Schema> schema_;  // shared: copies of a Config are cheap
  std::map<std::string, Entry> entries_;
};

}  // namespace tandem
