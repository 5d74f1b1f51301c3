#include "tokenizer/tokenize_command.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tandem/error.h"

namespace summarize {
namespace {

std::vector<int64_t> parse_ids(const std::string& line, const std::string& where) {
  const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::vector<int64_t> ids;
  if (json.is_array()) {
    for (const auto& id : json) {
      if (!id.is_number_integer()) break;
      ids.push_back(id.get<int64_t>());
    }
  }
  if (!json.is_array() || ids.size() != json.size())
    throw tandem::UsageError(where + ": expected a JSON array of token ids, got \"" + line + "\"");
  return ids;
}

}  // namespace

int tokenize_command(const Gpt2Tokenizer& tokenizer, const std::string& text_file, bool decode, std::ostream& out) {
  std::ifstream in(text_file, std::ios::binary);
  if (!std::filesystem::is_regular_file(text_file) || !in.is_open())
    throw tandem::UsageError("text file '" + text_file + "' cannot be opened");
  std::string line, ids_text;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (decode) {
      const std::string where = text_file + ":" + std::to_string(line_no);
      const auto ids = parse_ids(line, where);
      try {
        out << tokenizer.decode(ids) << '\n';
      } catch (const tandem::UsageError& error) {
        throw tandem::UsageError(where + ": " + error.what());
      }
      continue;
    }
    ids_text = "[";
    for (const int64_t id : tokenizer.encode(line)) {
      if (ids_text.size() > 1) ids_text += ',';
      ids_text += std::to_string(id);
    }
    out << ids_text << "]\n";
  }
  if (in.bad()) throw tandem::UsageError("text file '" + text_file + "' cannot be read");
  return tandem::kExitOk;
}

}  // namespace summarize
