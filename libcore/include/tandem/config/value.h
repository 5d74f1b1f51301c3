#pragma once
// The types a config key can hold, and how a value is written as TOML.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tandem {

// The order matches Value's alternatives, so a value's type is its index.
enum class KeyType { Bool, Int, Float, String, IntList, FloatList, StringList };

using Value = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                           std::vector<std::string>>;

inline KeyType type_of(const Value& value) { return static_cast<KeyType>(value.index()); }

// Short name for help and messages: "int", "float", "[string]".
const char* type_name(KeyType type);

// The value as a TOML literal that reads back to the same value: 3e-4 -> "0.0003",
// 1.0 stays a float, strings are quoted and escaped, lists are [a, b].
std::string to_toml_literal(const Value& value);

}  // namespace tandem
