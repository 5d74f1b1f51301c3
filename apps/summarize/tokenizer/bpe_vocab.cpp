#include "tokenizer/bpe_vocab.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "tandem/error.h"

namespace summarize {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExpected =
    "expected encoder.json + vocab.bpe (OpenAI's names) or vocab.json + merges.txt (Hugging "
    "Face's names) of GPT-2's BPE vocabulary; env/tokenizer.sh DIR puts them there";

// OpenAI's bytes_to_unicode(): the files spell every byte as a printable
// character so that BPE tokens never contain whitespace or control codes.
struct ByteAlphabet {
  int32_t byte_of[324];  // code point -> byte, -1 where no byte maps there
  std::string char_of[256];

  ByteAlphabet() {
    std::fill(std::begin(byte_of), std::end(byte_of), -1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int cp = printable ? b : next++;
      byte_of[cp] = b;
      char_of[b] = cp < 0x80 ? std::string(1, char(cp))
                             : std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    }
  }

  // False where `text` is not a sequence of characters of the alphabet.
  bool to_bytes(const std::string& text, std::string* bytes) const {
    bytes->clear();
    for (size_t i = 0; i < text.size();) {
      const unsigned char c = text[i];
      int cp;
      if (c < 0x80) {
        cp = c;
        i += 1;
      } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size() && (text[i + 1] & 0xC0) == 0x80) {
        cp = ((c & 0x1F) << 6) | (text[i + 1] & 0x3F);
        i += 2;
      } else {
        return false;
      }
      if (cp >= 324 || byte_of[cp] < 0) return false;
      bytes->push_back(char(byte_of[cp]));
    }
    return true;
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad())
    throw tandem::UsageError(path.string() + ": cannot be read; " + kExpected);
  return text;
}

[[noreturn]] void corrupt(const fs::path& path, const std::string& what) {
  throw tandem::UsageError(path.string() + ": " + what + "; " + kExpected);
}

// Fills tokens, byte_ids and eot; returns the ids by their spelling in the file.
std::unordered_map<std::string, int32_t> read_encoder(const fs::path& path, BpeVocab* vocab) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::parse_error& error) {
    corrupt(path, std::string("not valid JSON (") + error.what() + ")");
  }
  if (!json.is_object() || json.empty()) corrupt(path, "not a JSON object of token -> id");

  const ByteAlphabet alphabet;
  std::unordered_map<std::string, int32_t> ids;
  vocab->tokens.assign(json.size(), std::string());
  std::vector<bool> seen(json.size(), false);
  std::string bytes;
  for (const auto& [spelling, value] : json.items()) {
    const int64_t id = value.is_number_integer() ? value.get<int64_t>() : -1;
    if (id < 0 || id >= int64_t(json.size()))
      corrupt(path, "token \"" + spelling + "\" has id " + value.dump() + ", expected 0.." +
                        std::to_string(json.size() - 1));
    if (seen[id]) corrupt(path, "id " + std::to_string(id) + " is given to two tokens");
    if (spelling.empty() || !alphabet.to_bytes(spelling, &bytes))
      corrupt(path, "token \"" + spelling + "\" is not spelt in GPT-2's byte alphabet");
    seen[id] = true;
    vocab->tokens[id] = bytes;
    ids.emplace(spelling, int32_t(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = ids.find(alphabet.char_of[b]);
    if (it == ids.end()) corrupt(path, "no token for byte " + std::to_string(b));
    vocab->byte_ids[b] = it->second;
  }
  auto eot = ids.find("<|endoftext|>");
  if (eot == ids.end()) corrupt(path, "no <|endoftext|> token");
  vocab->eot = eot->second;
  return ids;
}

void read_merges(const fs::path& path, const std::unordered_map<std::string, int32_t>& ids,
                 BpeVocab* vocab) {
  const std::string text = read_file(path);
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Both tools write a "#version: ..." header; encoder.py drops line 1 unread.
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;

    const std::string where = ":" + std::to_string(line_no);
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      corrupt(path.string() + where,
              "expected two tokens separated by one space, got \"" + line + "\"");
    const auto left = ids.find(line.substr(0, space));
    const auto right = ids.find(line.substr(space + 1));
    const auto result = ids.find(line.substr(0, space) + line.substr(space + 1));
    if (left == ids.end() || right == ids.end() || result == ids.end())
      corrupt(path.string() + where,
              "merge \"" + line + "\" names a token that is not in the vocabulary");
    vocab->merges.push_back({left->second, right->second, result->second});
  }
  if (vocab->merges.empty()) corrupt(path, "no merges");
}

}  // namespace

BpeVocab read_bpe_vocab(const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  if (!fs::is_directory(root, error))
    throw tandem::UsageError("tokenizer directory '" + dir + "' does not exist; " + kExpected);

  const auto has = [&](const char* name) { return fs::is_regular_file(root / name, error); };
  const char* pairs[2][2] = {{"encoder.json", "vocab.bpe"}, {"vocab.json", "merges.txt"}};
  for (const auto& pair : pairs) {
    if (has(pair[0]) && has(pair[1])) {
      BpeVocab vocab;
      const auto ids = read_encoder(root / pair[0], &vocab);
      read_merges(root / pair[1], ids, &vocab);
      return vocab;
    }
  }
  for (const auto& pair : pairs)
    for (int i = 0; i < 2; ++i)
      if (has(pair[i]))
        throw tandem::UsageError("tokenizer directory '" + dir + "' has " + pair[i] + " but no " +
                                 pair[1 - i] + "; " + kExpected);
  throw tandem::UsageError("tokenizer directory '" + dir + "' holds no vocabulary; " + kExpected);
}

}  // namespace summarize
