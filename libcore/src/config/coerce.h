#pragma once
// Checking a value against its key, shared by files, --set, flags and Config::set.
#include <string>

#include "tandem/config/schema.h"

namespace tandem::config_detail {

// Brings `value` to the key's type where nothing is lost (an int for a float key;
// a float with an exact integral value for an int key; an empty list for any list
// key) and checks choices. Otherwise throws UsageError
// "<where>: <key> must be <what>, got <value>".
void coerce(const KeySpec& spec, Value& value, const std::string& where);

// The same error for input that is no Value at all: `got` describes it
// ("table", "'eight'").
// The choices as "fp32|fp16|bf16|auto", for messages and help.
std::string choices_text(const KeySpec& spec);

[[noreturn]] void throw_type_error(const KeySpec& spec, const std::string& got, const std::string& where);

}  // namespace tandem::config_detail
