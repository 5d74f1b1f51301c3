#pragma once
// What a program accepts: every config key with its type, default and doc, and
// the familiar flags (--batch-size) that are sugar for keys.
#include <map>
#include <string>
#include <vector>

#include "tandem/config/value.h"

namespace tandem {

struct KeySpec {
  std::string key;  // dotted: "train.lr" is `lr` in the TOML table [train]
  Value default_value;
  std::string doc;
  // A string key's or string list's allowed values (empty: any); an int
  // key's words that may stand in for a number ("auto": the program picks),
  // kept as strings in the Config.
  std::vector<std::string> choices;
  KeyType type() const { return type_of(default_value); }
  bool has_words() const { return type() == KeyType::Int && !choices.empty(); }
};

struct AliasSpec {
  std::string flag;  // "--batch-size"
  std::string key;   // "train.micro_batch"
  std::string doc;   // empty: the key's doc
};

// Declaring a key or alias wrongly is a bug in the program, so add() and alias()
// throw std::logic_error (bad name, duplicate, default not among choices, ...).
class Schema {
 public:
  // The key's type is the default's type: 8 is an int, 8.0 a float.
  Schema& add(const std::string& key, Value default_value, std::string doc, std::vector<std::string> choices = {});
  // A bool key's flag takes no value (`--amp` is `--set train.amp=true`).
  Schema& alias(const std::string& flag, const std::string& key, std::string doc = "");
  // A key this program read once and no longer does: set by a user, it is
  // refused with `instead` (what to set now); in the config an older model
  // file carries, it is passed over, so that the file still loads.
  Schema& retire(const std::string& key, std::string instead);

  bool has(const std::string& key) const;
  const KeySpec& at(const std::string& key) const;            // std::logic_error if undeclared
  const std::vector<KeySpec>& keys() const { return keys_; }  // in declaration order
  const std::vector<AliasSpec>& aliases() const { return aliases_; }
  bool retired(const std::string& key) const { return retired_.count(key) > 0; }

  // The declared key a user most likely meant by `unknown`, or "" if none is close.
  std::string nearest(const std::string& unknown) const;
  // "unknown key 'train.lrr' (did you mean 'train.lr'?)", or failing a close key,
  // the keys of the table it names or is in, or a pointer to --help; for a
  // retired key, what to set instead.
  std::string unknown_key_message(const std::string& unknown) const;

 private:
  std::vector<std::string> keys_under(const std::string& table) const;

  std::vector<KeySpec> keys_;
  std::map<std::string, size_t> index_;
  std::vector<AliasSpec> aliases_;
  std::map<std::string, std::string> retired_;  // key -> what to set instead
};

}  // namespace tandem
