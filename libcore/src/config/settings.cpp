#include "tandem/config/settings.h"

#include <algorithm>
#include <sstream>
#include <variant>

#include "tandem/error.h"

namespace tandem {

std::string Check::what() const {
  std::ostringstream s;
  if (!counts.empty()) {
    for (size_t i = 0; i < counts.size(); ++i) s << (i == 0 ? "" : i + 1 == counts.size() ? " or " : ", ") << counts[i];
  } else if (!std::isfinite(low) && !std::isfinite(high))
    s << "a finite number";
  else if (std::isfinite(high))
    s << "in " << (above_low ? "(" : "[") << low << ", " << high << (below_high ? ")" : "]");
  else
    s << (above_low ? "> " : ">= ") << low;
  return s.str();
}

bool Check::holds(double v) const {
  if (!counts.empty()) return std::find(counts.begin(), counts.end(), v) != counts.end();
  return std::isfinite(v) && (above_low ? v > low : v >= low) && (below_high ? v < high : v <= high);
}

void read_field(const Config& config, const std::string& key, bool& field) { field = config.get_bool(key); }
void read_field(const Config& config, const std::string& key, int64_t& field) { field = config.get_int(key); }
void read_field(const Config& config, const std::string& key, double& field) { field = config.get_double(key); }
void read_field(const Config& config, const std::string& key, std::string& field) { field = config.get_string(key); }
void read_field(const Config& config, const std::string& key, CountOrAuto& field) {
  field.automatic = std::holds_alternative<std::string>(config.get(key));
  field.value = field.automatic ? std::get<int64_t>(config.schema().at(key).default_value) : config.get_int(key);
}
void read_field(const Config& config, const std::string& key, std::vector<int64_t>& field) {
  field = config.get_int_list(key);
}
void read_field(const Config& config, const std::string& key, std::vector<double>& field) {
  field = config.get_double_list(key);
}
void read_field(const Config& config, const std::string& key, std::vector<std::string>& field) {
  field = config.get_string_list(key);
}

namespace {

// `subject` is the key, or for a list "each value of KEY".
template <class T>
void require_number(const Config& config, const std::string& key, const std::string& subject, T value,
                    const Check& check) {
  if (check.holds(static_cast<double>(value))) return;
  std::ostringstream got;
  got << value;
  throw UsageError(subject + " must be " + check.what() + ", got " + got.str() + " (" + config.source(key) + ")");
}

}  // namespace

void require(const Config&, const std::string&, bool, const Check&) {}
void require(const Config& config, const std::string& key, int64_t value, const Check& check) {
  require_number(config, key, key, value, check);
}
void require(const Config& config, const std::string& key, double value, const Check& check) {
  require_number(config, key, key, value, check);
}
void require(const Config& config, const std::string& key, const std::string& value, const Check& check) {
  if (check.named && value.empty()) throw UsageError(key + " must not be empty (" + config.source(key) + ")");
}
void require(const Config& config, const std::string& key, const CountOrAuto& value, const Check& check) {
  if (!value.automatic) require(config, key, value.value, check);
}
void require(const Config& config, const std::string& key, const std::vector<int64_t>& value, const Check& check) {
  for (int64_t v : value) require_number(config, key, "each value of " + key, v, check);
}
void require(const Config& config, const std::string& key, const std::vector<double>& value, const Check& check) {
  for (double v : value) require_number(config, key, "each value of " + key, v, check);
}
void require(const Config&, const std::string&, const std::vector<std::string>&, const Check&) {}

}  // namespace tandem
