#include "coerce.h"

#include <algorithm>

#include "tandem/error.h"

namespace tandem::config_detail {
namespace {

const char* expected(KeyType type) {
  switch (type) {
    case KeyType::Bool:
      return "a boolean";
    case KeyType::Int:
      return "an integer";
    case KeyType::Float:
      return "a number";
    case KeyType::String:
      return "a string";
    case KeyType::IntList:
      return "a list of integers";
    case KeyType::FloatList:
      return "a list of numbers";
    case KeyType::StringList:
      return "a list of strings";
  }
  return "?";
}

std::string describe(const Value& value) {
  static const char* const kinds[] = {"boolean", "integer", "float", "string", "list", "list", "list"};
  return std::string(kinds[value.index()]) + " " + to_toml_literal(value);
}

bool is_list(KeyType type) {
  return type == KeyType::IntList || type == KeyType::FloatList || type == KeyType::StringList;
}

bool is_empty_list(const Value& value) {
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) return v->empty();
  if (const auto* v = std::get_if<std::vector<double>>(&value)) return v->empty();
  if (const auto* v = std::get_if<std::vector<std::string>>(&value)) return v->empty();
  return false;
}

// 2.0 is the integer 2 but 2.5 is not, and neither is 1e30 (beyond int64).
bool exact_int(double d, int64_t& out) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
  out = static_cast<int64_t>(d);
  return static_cast<double>(out) == d;
}

bool convert(KeyType want, Value& value) {
  const KeyType have = type_of(value);
  if (have == want) return true;
  if (is_list(want) && is_empty_list(value)) {
    value = want == KeyType::IntList     ? Value(std::vector<int64_t>{})
            : want == KeyType::FloatList ? Value(std::vector<double>{})
                                         : Value(std::vector<std::string>{});
    return true;
  }
  if (want == KeyType::Float && have == KeyType::Int) {
    value = static_cast<double>(std::get<int64_t>(value));
    return true;
  }
  if (want == KeyType::Int && have == KeyType::Float) {
    int64_t i = 0;
    if (!exact_int(std::get<double>(value), i)) return false;
    value = i;
    return true;
  }
  if (want == KeyType::FloatList && have == KeyType::IntList) {
    const auto& ints = std::get<std::vector<int64_t>>(value);
    value = std::vector<double>(ints.begin(), ints.end());
    return true;
  }
  if (want == KeyType::IntList && have == KeyType::FloatList) {
    std::vector<int64_t> ints;
    for (const double d : std::get<std::vector<double>>(value)) {
      if (!exact_int(d, ints.emplace_back())) return false;
    }
    value = std::move(ints);
    return true;
  }
  return false;
}

void check_choices(const KeySpec& spec, const Value& value, const std::string& where) {
  if (spec.choices.empty()) return;
  std::vector<std::string> given;
  if (const auto* s = std::get_if<std::string>(&value)) given = {*s};
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) given = *list;
  for (const std::string& s : given) {
    if (std::find(spec.choices.begin(), spec.choices.end(), s) != spec.choices.end()) continue;
    throw UsageError(where + ": " + spec.key + " must be one of " + choices_text(spec) + ", got " + to_toml_literal(s));
  }
}

}  // namespace

void coerce(const KeySpec& spec, Value& value, const std::string& where) {
  if (is_word(spec, value)) return;
  if (!convert(spec.type(), value)) throw_type_error(spec, describe(value), where);
  if (!spec.has_words()) check_choices(spec, value, where);
}

bool is_word(const KeySpec& spec, const Value& value) {
  const auto* s = std::get_if<std::string>(&value);
  return spec.has_words() && s && std::find(spec.choices.begin(), spec.choices.end(), *s) != spec.choices.end();
}

std::string choices_text(const KeySpec& spec) {
  std::string text;
  for (const std::string& c : spec.choices) text += (text.empty() ? "" : "|") + c;
  return text;
}

std::string choices_note(const KeySpec& spec) {
  return (spec.has_words() ? "(an integer or " : "(") + choices_text(spec) + ")";
}

void throw_type_error(const KeySpec& spec, const std::string& got, const std::string& where) {
  std::string words;
  for (size_t i = 0; spec.has_words() && i < spec.choices.size(); ++i)
    words += (i + 1 == spec.choices.size() ? " or " : ", ") + to_toml_literal(spec.choices[i]);
  throw UsageError(where + ": " + spec.key + " must be " + expected(spec.type()) + words + ", got " + got);
}

}  // namespace tandem::config_detail
