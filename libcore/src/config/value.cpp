#include "tandem/config/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tandem {
namespace {

std::string literal(bool b) { return b ? "true" : "false"; }

std::string literal(int64_t i) { return std::to_string(i); }

std::string literal(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // The shortest text that reads back as the same double (0.1 stays "0.1"), in
  // plain notation unless that would be long: 0.0003 rather than 3e-04.
  const double magnitude = std::fabs(d);
  const bool plain = magnitude == 0 || (magnitude >= 1e-5 && magnitude < 1e16);
  char buf[32];
  const auto result =
      std::to_chars(buf, buf + sizeof buf, d, plain ? std::chars_format::fixed : std::chars_format::scientific);
  std::string text(buf, result.ptr);
  // Without a point or exponent TOML would read the value back as an integer.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string literal(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

template <class T>
std::string literal(const std::vector<T>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += literal(items[i]);
  }
  return out + "]";
}

}  // namespace

const char* type_name(KeyType type) {
  switch (type) {
    case KeyType::Bool:
      return "bool";
    case KeyType::Int:
      return "int";
    case KeyType::Float:
      return "float";
    case KeyType::String:
      return "string";
    case KeyType::IntList:
      return "[int]";
    case KeyType::FloatList:
      return "[float]";
    case KeyType::StringList:
      return "[string]";
  }
  return "?";
}

std::string to_toml_literal(const Value& value) {
  return std::visit([](const auto& v) { return literal(v); }, value);
}

}  // namespace tandem
