#pragma once
// Settings declared once. A settings struct lists its keys in one function,
//
//   template <class Self, class Visit>
//   static void each_key(Self& s, Visit&& visit) {
//     visit("dit.qk_norm", s.qk_norm, "RMSNorm over each head's q and k", any());
//     ...
//   }
//
// and everything else walks that list: declare_keys puts each key in the
// schema with the field's initial value as its default (so --help, job files
// and the docs' key tables, which tests/docs/key_tables.py makes from --help,
// agree), and read_keys fills the fields from a Config and checks
// each value against its Check, stopping the run with a UsageError that names
// the key, what it must be and where the value came from. A new key is then
// one field and one line beside the code that uses it; what reads it, by its
// field, cannot misspell it.
//
// A Check says what one value must be for any run. Relations between keys
// (cv.fold below cv.folds, warmup shorter than the run) are checked where
// both are known, by hand.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tandem/config/config.h"
#include "tandem/config/schema.h"

namespace tandem {

// A count the program may pick when the user sets "auto" (train.micro_batch:
// the Trainer picks the largest the memory plan fits). Under "auto", `value`
// is the key's default: what a command without a Trainer (predict) uses.
struct CountOrAuto {
  int64_t value = 0;
  bool automatic = false;
};

struct Check {
  std::vector<std::string> choices;  // a string (or each of a list's) among these; empty: any
  bool named = false;                // a string that is not empty
  double low = -INFINITY, high = INFINITY;
  bool above_low = false, below_high = false;  // strict bounds
  std::vector<int64_t> counts;                 // a whole number among these; empty: any in the bounds

  // "in [0, 1)", ">= 1", "> 0", "18 or 34".
  std::string what() const;
  bool holds(double v) const;
};

inline Check any() { return {}; }
inline Check at_least(double low) { return {{}, false, low}; }
inline Check above(double low) { return {{}, false, low, INFINITY, true}; }
inline Check fraction() { return {{}, false, 0.0, 1.0, false, true}; }  // [0, 1)
inline Check in_range(double low, double high) { return {{}, false, low, high}; }
inline Check above_up_to(double low, double high) { return {{}, false, low, high, true}; }  // (low, high]
inline Check strictly_between(double low, double high) { return {{}, false, low, high, true, true}; }
inline Check one_of_counts(std::vector<int64_t> counts) {
  Check c;
  c.counts = std::move(counts);
  return c;
}
inline Check one_of(std::vector<std::string> choices) { return {std::move(choices)}; }
inline Check at_least_or_auto(double low) {
  Check c = at_least(low);
  c.choices = {"auto"};
  return c;
}
inline Check a_name() { return {{}, true}; }

// The field's value as the schema declares its default.
template <class T>
Value default_of(const T& field) {
  return field;
}
inline Value default_of(const CountOrAuto& field) { return field.value; }

// The field from the Config's value of `key`.
void read_field(const Config& config, const std::string& key, bool& field);
void read_field(const Config& config, const std::string& key, int64_t& field);
void read_field(const Config& config, const std::string& key, double& field);
void read_field(const Config& config, const std::string& key, std::string& field);
void read_field(const Config& config, const std::string& key, CountOrAuto& field);
void read_field(const Config& config, const std::string& key, std::vector<int64_t>& field);
void read_field(const Config& config, const std::string& key, std::vector<double>& field);
void read_field(const Config& config, const std::string& key, std::vector<std::string>& field);

// Throws UsageError when the value of `key` fails `check`: "dit.class_dropout
// must be in [0, 1), got 1 (--set)". Choices are the schema's to enforce
// when the value is set; a bool holds any check.
void require(const Config& config, const std::string& key, bool value, const Check& check);
void require(const Config& config, const std::string& key, int64_t value, const Check& check);
void require(const Config& config, const std::string& key, double value, const Check& check);
void require(const Config& config, const std::string& key, const std::string& value, const Check& check);
void require(const Config& config, const std::string& key, const CountOrAuto& value, const Check& check);
void require(const Config& config, const std::string& key, const std::vector<int64_t>& value, const Check& check);
void require(const Config& config, const std::string& key, const std::vector<double>& value, const Check& check);
void require(const Config& config, const std::string& key, const std::vector<std::string>& value, const Check& check);

// Declares S's keys, with `defaults`' fields as their defaults.
template <class S>
void declare_keys(Schema& schema, S defaults = {}) {
  S::each_key(defaults, [&](const std::string& key, const auto& field, const std::string& doc, const Check& check) {
    schema.add(key, default_of(field), doc, check.choices);
  });
}

// Each key of S with its field's value, in each_key's order: what a struct
// of settings stands for as keys (summarize's demo overlay sets them).
template <class S>
std::vector<std::pair<std::string, Value>> key_values(S settings) {
  std::vector<std::pair<std::string, Value>> values;
  S::each_key(settings, [&](const std::string& key, const auto& field, const std::string&, const Check&) {
    values.emplace_back(key, default_of(field));
  });
  return values;
}

// S's fields from the Config, unchecked: for the config a model file
// carries, which the build that wrote it accepted, or keys a command reads
// only some of.
template <class S>
S read_fields(const Config& config, S settings = {}) {
  S::each_key(settings, [&](const std::string& key, auto& field, const std::string&, const Check&) {
    read_field(config, key, field);
  });
  return settings;
}

// S's fields from the Config, each checked: a user's settings.
template <class S>
S read_keys(const Config& config, S settings = {}) {
  S::each_key(settings, [&](const std::string& key, auto& field, const std::string&, const Check& check) {
    read_field(config, key, field);
    require(config, key, field, check);
  });
  return settings;
}

}  // namespace tandem
