#pragma once
// Checking a value against its key, shared by files, --set, flags and Config::set.
#include <string>

#include "tandem/config/schema.h"

namespace tandem::config_detail {

// Brings `value` to the key's type where nothing is lost (an int for a float key;
// a float with an exact integral value for an int key; an empty list for any list
// key) and checks choices. Otherwise throws UsageError
// "<where>: <key> must be <what>, got <value>". An int key's word stays a string.
void coerce(const KeySpec& spec, Value& value, const std::string& where);
// Whether `value` is one of the words an int key takes in place of a number.
bool is_word(const KeySpec& spec, const Value& value);

// The same error for input that is no Value at all: `got` describes it
// ("table", "'eight'").
// The choices as "fp32|fp16|bf16|auto", for messages and help.
std::string choices_text(const KeySpec& spec);
// For docs: "(fp32|fp16|bf16|auto)", or for an int key's words "(an integer or auto)".
std::string choices_note(const KeySpec& spec);

[[noreturn]] void throw_type_error(const KeySpec& spec, const std::string& got, const std::string& where);

}  // namespace tandem::config_detail
