#include "tokenizer/bpe_vocab.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "tandem/error.h"

namespace summarize {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExpected =
    "expected GPT-2's BPE vocabulary as gpt2.tiktoken (tiktoken's ranks), encoder.json + "
    "vocab.bpe (OpenAI's names) or vocab.json + merges.txt (Hugging Face's names); "
    "env/tokenizer.sh DIR puts gpt2.tiktoken there";

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
      char_of[b] = cp < 0x80 ? std::string(1, char(cp)) : std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
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
  if (!in.is_open() || in.bad()) throw tandem::UsageError(path.string() + ": cannot be read; " + kExpected);
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
  } catch (const nlohmann::json::exception& error) {  // also out_of_range: a number past double
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
      corrupt(path,
              "token \"" + spelling + "\" has id " + value.dump() + ", expected 0.." + std::to_string(json.size() - 1));
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

void read_merges(const fs::path& path, const std::unordered_map<std::string, int32_t>& ids, BpeVocab* vocab) {
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
      corrupt(path.string() + where, "expected two tokens separated by one space, got \"" + line + "\"");
    const auto left = ids.find(line.substr(0, space));
    const auto right = ids.find(line.substr(space + 1));
    const auto result = ids.find(line.substr(0, space) + line.substr(space + 1));
    if (left == ids.end() || right == ids.end() || result == ids.end())
      corrupt(path.string() + where, "merge \"" + line + "\" names a token that is not in the vocabulary");
    vocab->merges.push_back({left->second, right->second, result->second});
  }
  if (vocab->merges.empty()) corrupt(path, "no merges");
}

// Strict RFC 4648 base64 with padding, the way tiktoken writes each token.
bool decode_base64(std::string_view text, std::string* bytes) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  bytes->clear();
  if (text.empty() || text.size() % 4 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return false;
    uint32_t group = 0;
    for (int j = 0; j < 4; ++j) {
      const int v = j >= 4 - pad ? 0 : value(text[i + j]);
      if (v < 0) return false;
      group = group << 6 | uint32_t(v);
    }
    for (int j = 0; j < 3 - pad; ++j) bytes->push_back(char(group >> (16 - 8 * j) & 0xFF));
  }
  return true;
}

// tiktoken's format: one "base64(token bytes) rank" per line, ranks 0..N-1,
// where a lower rank merges first. GPT-2's ids are these ranks, and
// <|endoftext|> is N. The file lists tokens, not merges: each merge is found
// as tiktoken would make the token, by byte-pair merging its bytes with the
// lower ranks only, which ends in exactly the two tokens it was merged from.
void read_tiktoken(const fs::path& path, BpeVocab* vocab) {
  const std::string text = read_file(path);
  std::unordered_map<std::string, int32_t> ranks;
  std::string bytes;
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    const size_t space = line.find(' ');
    const std::string_view rank_text = space == std::string_view::npos ? "" : line.substr(space + 1);
    const bool digits = !rank_text.empty() && rank_text.size() < 10 &&
                        std::all_of(rank_text.begin(), rank_text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || !decode_base64(line.substr(0, space), &bytes))
      corrupt(where, "expected \"<base64 token> <rank>\", got \"" + std::string(line.substr(0, 80)) + "\"");
    const int64_t rank = std::stoll(std::string(rank_text));
    if (rank != int64_t(vocab->tokens.size()))
      corrupt(where, "rank " + std::to_string(rank) + ", expected " + std::to_string(vocab->tokens.size()) +
                         " (ranks are 0, 1, 2, ... in order)");
    if (!ranks.emplace(bytes, int32_t(rank)).second)
      corrupt(where, "the token of rank " + std::to_string(rank) + " is listed twice");
    vocab->tokens.push_back(bytes);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = ranks.find(std::string(1, char(b)));
    if (it == ranks.end()) corrupt(path, "no token for byte " + std::to_string(b));
    vocab->byte_ids[b] = it->second;
  }
  for (int32_t id = 0; id < int32_t(vocab->tokens.size()); ++id) {
    const std::string& token = vocab->tokens[id];
    if (token.size() < 2) continue;
    std::vector<std::string> parts;
    for (char c : token) parts.emplace_back(1, c);
    while (parts.size() > 2) {
      size_t best = parts.size();
      int32_t best_rank = id;
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        auto it = ranks.find(parts[i] + parts[i + 1]);
        if (it != ranks.end() && it->second < best_rank) best = i, best_rank = it->second;
      }
      if (best == parts.size()) break;
      parts[best] += parts[best + 1];
      parts.erase(parts.begin() + best + 1);
    }
    const auto left = parts.size() == 2 ? ranks.find(parts[0]) : ranks.end();
    if (left == ranks.end())
      corrupt(path, "the token of rank " + std::to_string(id) + " is not two tokens of lower rank merged");
    vocab->merges.push_back({left->second, ranks.at(parts[1]), id});
  }
  if (vocab->merges.empty()) corrupt(path, "no merges");
  vocab->eot = int32_t(vocab->tokens.size());
  vocab->tokens.emplace_back("<|endoftext|>");
}

}  // namespace

BpeVocab read_bpe_vocab(const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  if (!fs::is_directory(root, error))
    throw tandem::UsageError("tokenizer directory '" + dir + "' does not exist; " + kExpected);

  const auto has = [&](const char* name) { return fs::is_regular_file(root / name, error); };
  if (has("gpt2.tiktoken")) {
    BpeVocab vocab;
    read_tiktoken(root / "gpt2.tiktoken", &vocab);
    return vocab;
  }
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
        throw tandem::UsageError("tokenizer directory '" + dir + "' has " + pair[i] + " but no " + pair[1 - i] + "; " +
                                 kExpected);
  throw tandem::UsageError("tokenizer directory '" + dir + "' holds no vocabulary; " + kExpected);
}

}  // namespace summarize
