#pragma once
// `summarize tokenize`: token ids of each line of a text file, or the text of
// each line of ids.
#include <ostream>
#include <string>

#include "tokenizer/gpt2_tokenizer.h"

namespace summarize {

// Per line of `text_file` (its "\n" dropped, nothing else), one line on `out`:
// the JSON array of its token ids, or with `decode`, the text of a JSON array
// of ids. Returns the exit status; throws tandem::UsageError naming file:line.
int tokenize_command(const Gpt2Tokenizer& tokenizer, const std::string& text_file, bool decode, std::ostream& out);

}  // namespace summarize
