// GPT-2 tokenizer: ids against the reference encoders, round trips on any
// bytes, both file layouts, errors users read, threads, the tokenize command.
// Expected ids are OpenAI's (encoder.py, tiktoken's "gpt2"); tests/peers checks
// a larger corpus against tiktoken itself. Tests that need the real vocabulary
// (gpt2.tiktoken) skip when env/tokenizer.sh has not run.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "../unit/test_support.h"
#include "tandem/error.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/tokenize_command.h"

namespace summarize {
namespace {

namespace fs = std::filesystem;
using tandem::UsageError;
using tandem::testing::message_of;
using Ids = std::vector<int64_t>;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A token's bytes as OpenAI's files spell them (bytes_to_unicode()).
std::string spell(const std::string& bytes) {
  static const auto alphabet = [] {
    std::vector<std::string> char_of(256);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int cp = printable ? b : next++;
      char_of[b] = cp < 0x80 ? std::string(1, char(cp)) : std::string{char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
    }
    return char_of;
  }();
  std::string text;
  for (unsigned char c : bytes) text += alphabet[c];
  return text;
}

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t j = 0; j < 3; ++j) group = group << 8 | (j < n ? uint8_t(bytes[i + j]) : 0);
    for (size_t j = 0; j < 4; ++j) out += j <= n ? digits[group >> (18 - 6 * j) & 63] : '=';
  }
  return out;
}

// The real vocabulary, loaded once for the whole suite.
class RealVocab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = default_tokenizer_dir();
    for (const char* name : {"gpt2.tiktoken", "encoder.json", "vocab.json"})
      if (fs::exists(fs::path(dir_) / name)) {
        tokenizer_.emplace(Gpt2Tokenizer::load(dir_));
        break;
      }
  }
  void SetUp() override {
    if (!tokenizer_) GTEST_SKIP() << "no GPT-2 vocabulary in " << dir_ << "; env/tokenizer.sh puts it there";
  }
  const Gpt2Tokenizer& tok() const { return *tokenizer_; }

  static std::string dir_;
  static std::optional<Gpt2Tokenizer> tokenizer_;
};
std::string RealVocab::dir_;
std::optional<Gpt2Tokenizer> RealVocab::tokenizer_;

struct Known {
  std::string text;
  Ids ids;
};

const std::vector<Known>& known() {
  static const std::vector<Known> cases = {
      {"Hello world", {15496, 995}},
      {"I'm", {40, 1101}},
      {"don't", {9099, 470}},
      {"they'll", {9930, 1183}},
      {"She's here, we've gone, you're right, I'd say",
       {3347, 338, 994, 11, 356, 1053, 3750, 11, 345, 821, 826, 11, 314, 1549, 910}},
      {"IT'S", {2043, 6, 50}},  // contractions are lower-case only
      {"a  b\n\n  c", {64, 220, 275, 628, 220, 269}},
      {"\tindented\n  trailing   ", {197, 521, 4714, 198, 220, 25462, 220, 220, 220}},
      {"12345 67890 3.14159 1,000,000", {10163, 2231, 718, 3695, 3829, 513, 13, 1415, 19707, 352, 11, 830, 11, 830}},
      {"Hello, world! (test) -- \"quoted\" ... ?!",
       {15496, 11, 995, 0, 357, 9288, 8, 1377, 366, 421, 5191, 1, 2644, 5633, 0}},
      // 🤖, 👍🏽 and 👨‍👩‍👧
      {"I love \xF0\x9F\xA4\x96 and \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD and "
       "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
       {40,  1842,  12520, 97,  244, 290,   50169, 235, 8582, 237,   121,
        290, 50169, 101,   447, 235, 41840, 102,   447, 235,  41840, 100}},
      // 自然言語処理
      {"\xE8\x87\xAA\xE7\x84\xB6\xE8\xA8\x80\xE8\xAA\x9E\xE5\x87\xA6\xE7\x90\x86",
       {164, 229, 103, 47078, 114, 164, 101, 222, 45739, 252, 49035, 99, 49426, 228}},
      // 한국어 텍스트
      {"\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xED\x85\x8D\xEC\x8A\xA4\xED\x8A\xB8",
       {47991, 250, 166, 113, 255, 168, 244, 112, 220, 169, 227, 235, 168, 232, 97, 169, 232, 116}},
      {"e\xCC\x81 n\xCC\x83", {68, 136, 223, 299, 136, 225}},  // é ñ with combining marks
      {"caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m",
       {66, 1878, 2634, 41492, 40560, 16345, 2634, 6184, 227, 782, 2536, 9101, 76}},
      {"\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",  // Привет мир
       {140, 253, 21169, 18849, 38857, 16843, 20375, 12466, 120, 18849, 21169}},
      {"\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84"
       "\xD9\x85",  // مرحبا بالعالم
       {25405, 26897, 148, 255, 39848, 12919, 17550, 101, 23525, 44690, 23525, 25405}},
      {"#Person1#: Hi, how are you?\n#Person2#: I'm fine.",
       {2, 15439, 16, 2, 25, 15902, 11, 703, 389, 345, 30, 198, 2, 15439, 17, 2, 25, 314, 1101, 3734, 13}},
      {"x\xC2\xA0y\xE3\x80\x80z", {87, 1849, 88, 5099, 222, 89}},  // NBSP, ideographic space
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
      {"", {}},
      // U+0085 and U+FEFF: here gpt-3-encoder, whose \s is JavaScript's, gives
      // [126, 227, 6, 260] and [87, 220, 171, 119, 123, 88]; these are tiktoken's
      // and encoder.py's, for which \s is Unicode's White_Space.
      {"\xC2\x85're", {126, 227, 821}},
      {"x \xEF\xBB\xBFy", {87, 27332, 119, 123, 88}},
  };
  return cases;
}

TEST_F(RealVocab, KnownIds) {
  EXPECT_EQ(tok().vocab_size(), 50257);
  EXPECT_EQ(tok().eot(), 50256);
  for (const Known& k : known()) {
    EXPECT_EQ(tok().encode(k.text), k.ids) << "text: " << nlohmann::json(k.text).dump();
    EXPECT_EQ(tok().decode(k.ids), k.text);
  }
}

TEST_F(RealVocab, EndOfTextIsTextUnlessAllowed) {
  const std::string text = "Hello world<|endoftext|>Bye";
  EXPECT_EQ(tok().encode(text), (Ids{15496, 995, 27, 91, 437, 1659, 5239, 91, 29, 3886, 68}));
  EXPECT_EQ(tok().encode(text, SpecialTokens::kAllowed), (Ids{15496, 995, 50256, 3886, 68}));
  EXPECT_EQ(tok().encode("<|endoftext|><|endoftext|>", SpecialTokens::kAllowed), (Ids{50256, 50256}));
  EXPECT_EQ(tok().decode({15496, 995, 50256}), "Hello world<|endoftext|>");
}

TEST_F(RealVocab, RoundTripsTrickyUnicode) {
  const std::vector<std::string> texts = {
      "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88",  // 🏳️‍🌈 (ZWJ sequence)
      "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8",                          // 🇺🇸 flag
      "Z\xCD\x91\xCD\x97\xCD\x8B"
      "a\xCC\x80\xCC\x81lgo",  // stacked combining marks
      "\xE2\x80\xAE"
      "reversed\xE2\x80\xAC \xE2\x80\x8B",         // bidi controls, zero width space
      "\xEF\xBF\xBD\xEF\xBF\xBF\xF4\x8F\xBF\xBF",  // U+FFFD, U+FFFF, U+10FFFF
      std::string("nul\0inside", 10),
      "\r\n\r\n\x0B\x0C\xE2\x80\xA8\xE2\x80\xA9",        // CR LF, VT, FF, line/paragraph separators
      "\xD9\xA3\xD9\xA4 \xC2\xB2\xC2\xBD \xE2\x85\xAB",  // Arabic-Indic digits, ², ½, Ⅻ
  };
  for (const auto& text : texts) EXPECT_EQ(tok().decode(tok().encode(text)), text);

  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {  // random code points from every plane
    std::string text;
    for (int n = rng() % 20; n > 0; --n) {
      uint32_t cp = rng() % 4 == 0 ? rng() % 0x80 : rng() % 0x110000;
      if (cp >= 0xD800 && cp < 0xE000) cp = ' ';
      if (cp < 0x80) {
        text += char(cp);
      } else if (cp < 0x800) {
        text += {char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
      } else if (cp < 0x10000) {
        text += {char(0xE0 | cp >> 12), char(0x80 | (cp >> 6 & 0x3F)), char(0x80 | (cp & 0x3F))};
      } else {
        text += {char(0xF0 | cp >> 18), char(0x80 | (cp >> 12 & 0x3F)), char(0x80 | (cp >> 6 & 0x3F)),
                 char(0x80 | (cp & 0x3F))};
      }
    }
    ASSERT_EQ(tok().decode(tok().encode(text)), text) << nlohmann::json(text).dump();
  }
}

TEST_F(RealVocab, RoundTripsAnyBytes) {
  // PCRE2 matches valid UTF-8 only (PCRE2_MATCH_INVALID_UTF); each run of other
  // bytes becomes a piece of its own, so a lone byte is its byte token.
  const Ids lone = tok().encode("\xFF");
  ASSERT_EQ(lone.size(), 1u);
  EXPECT_EQ(tok().decode(lone), "\xFF");
  EXPECT_EQ(tok().encode("a\xFF"
                         "b"),
            (Ids{64, lone[0], 65}));

  const std::vector<std::string> broken = {"\xE4\xB8",
                                           "\xE4\xB8"
                                           "abc",
                                           "\xC0\xAF",
                                           "\xED\xA0\x80",
                                           "\xF5\x80\x80\x80",
                                           "ok \x80\x80\x80 ok",
                                           "\xF0\x9F\x98",
                                           "caf\xC3",
                                           "  \xFE\xFF  ",
                                           "I'm\xFF's"};
  for (const auto& text : broken) EXPECT_EQ(tok().decode(tok().encode(text)), text);

  std::mt19937 rng(11);
  const std::string fragments[] = {
      "a", " the", "'s", " ", "\n", "1", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xC3", "\x80", "\xFF", "!"};
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int n = rng() % 40; n > 0; --n) {
      if (i % 2)
        text += char(rng() % 256);
      else
        text += fragments[rng() % std::size(fragments)];
    }
    ASSERT_EQ(tok().decode(tok().encode(text)), text) << "case " << i;
  }
}

TEST_F(RealVocab, LongPiecesStayFast) {
  // One \p{L}+ piece of 200,000 bytes: BPE on it must not be quadratic.
  const std::string letters(200000, 'a');
  const Ids ids = tok().encode(letters);
  EXPECT_LT(ids.size(), letters.size() / 2);
  EXPECT_EQ(tok().decode(ids), letters);
  const std::string spaces = std::string(100000, ' ') + "x";
  EXPECT_EQ(tok().decode(tok().encode(spaces)), spaces);
}

TEST_F(RealVocab, ThreadsAgreeWithOneThread) {
  // Many distinct multi-token words: threads race to fill the cache and its
  // shards fill up and are emptied while others read.
  std::mt19937 rng(3);
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) {
    std::string line;
    for (int w = 0; w < 40; ++w) {
      line += ' ';
      for (int n = 3 + rng() % 6; n > 0; --n) line += char('a' + rng() % 26);
    }
    lines.push_back(line);
  }
  const Gpt2Tokenizer fresh = Gpt2Tokenizer::load(dir_);
  std::vector<Ids> expected;
  for (const auto& line : lines) expected.push_back(fresh.encode(line));

  const Gpt2Tokenizer shared = Gpt2Tokenizer::load(dir_);
  std::vector<Ids> got(lines.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int pass = 0; pass < 2; ++pass)
        for (size_t i = t; i < lines.size(); i += 8) got[i] = shared.encode(lines[i]);
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(got[i], expected[i]) << lines[i];
}

TEST_F(RealVocab, DecodeRejectsIdsOutsideTheVocabulary) {
  const auto message = message_of<UsageError>([&] { tok().decode({15496, 50257}); });
  EXPECT_NE(message.find("50257"), std::string::npos) << message;
  EXPECT_NE(message.find("position 1"), std::string::npos) << message;
  EXPECT_THROW(tok().decode({-1}), UsageError);
}

class Gpt2Files : public tandem::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    source_ = default_tokenizer_dir();
    if (!fs::exists(fs::path(source_) / "gpt2.tiktoken"))
      GTEST_SKIP() << "no gpt2.tiktoken in " << source_ << "; env/tokenizer.sh puts it there";
  }
  std::string source_;
};

TEST_F(Gpt2Files, OpenAiAndHuggingFaceLayoutsGiveTheSameIds) {
  // OpenAI's encoder.json + vocab.bpe and Hugging Face's vocab.json +
  // merges.txt hold the same vocabulary as gpt2.tiktoken, written here from it.
  const BpeVocab vocab = read_bpe_vocab(source_);
  ASSERT_EQ(vocab.tokens.size(), 50257u);
  ASSERT_EQ(vocab.merges.size(), 50000u);
  nlohmann::json encoder = nlohmann::json::object();
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    encoder[int32_t(id) == vocab.eot ? vocab.tokens[id] : spell(vocab.tokens[id])] = id;
  std::string merges = "#version: 0.2\n";
  for (const BpeMerge& m : vocab.merges)
    merges += spell(vocab.tokens[m.left]) + " " + spell(vocab.tokens[m.right]) + "\n";
  const fs::path openai_dir = dir_ / "openai", hf_dir = dir_ / "hf";
  fs::create_directories(openai_dir);
  fs::create_directories(hf_dir);
  write_file(openai_dir / "encoder.json", encoder.dump());
  write_file(openai_dir / "vocab.bpe", merges);
  write_file(hf_dir / "vocab.json", encoder.dump(2));
  write_file(hf_dir / "merges.txt",
             "#version: 0.2 - Trained by `huggingface/tokenizers`" + merges.substr(merges.find('\n')));

  const auto tiktoken = Gpt2Tokenizer::load(source_);
  std::mt19937 rng(5);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += char(rng() % 2 ? 'a' + rng() % 26 : " .,\n'0\xC3\xA9"[rng() % 8]);
  for (const fs::path& dir : {openai_dir, hf_dir}) {
    const auto other = Gpt2Tokenizer::load(dir.string());
    EXPECT_EQ(other.eot(), 50256);
    for (const Known& k : known()) EXPECT_EQ(other.encode(k.text), k.ids);
    EXPECT_EQ(other.encode(text), tiktoken.encode(text));
  }
}

TEST_F(Gpt2Files, TiktokenRanksAreGpt2Ids) {
  const BpeVocab vocab = read_bpe_vocab(source_);
  EXPECT_EQ(vocab.eot, 50256);
  EXPECT_EQ(vocab.tokens[50256], "<|endoftext|>");
  EXPECT_EQ(vocab.tokens[995], " world");
  EXPECT_EQ(vocab.byte_ids[uint8_t('!')], 0);
  EXPECT_EQ(vocab.byte_ids[uint8_t(' ')], 220);
  // GPT-2's first merge, "Ġ t", made token 256.
  EXPECT_EQ(vocab.merges[0].result, 256);
  EXPECT_EQ(vocab.tokens[vocab.merges[0].left] + vocab.tokens[vocab.merges[0].right], " t");
}

TEST_F(Gpt2Files, MissingFilesAreNamed) {
  const std::string missing = (dir_ / "nowhere").string();
  auto message = message_of<UsageError>([&] { Gpt2Tokenizer::load(missing); });
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("gpt2.tiktoken"), std::string::npos) << message;
  EXPECT_NE(message.find("encoder.json + vocab.bpe"), std::string::npos) << message;
  EXPECT_NE(message.find("vocab.json + merges.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("env/tokenizer.sh"), std::string::npos) << message;

  message = message_of<UsageError>([&] { Gpt2Tokenizer::load(dir_.string()); });
  EXPECT_NE(message.find("holds no vocabulary"), std::string::npos) << message;

  write_file(dir_ / "encoder.json", "{}");
  message = message_of<UsageError>([&] { Gpt2Tokenizer::load(dir_.string()); });
  EXPECT_NE(message.find("has encoder.json but no vocab.bpe"), std::string::npos) << message;
}

TEST_F(Gpt2Files, TokenizeCommand) {
  const auto tokenizer = Gpt2Tokenizer::load(source_);
  write_file(dir_ / "text.txt", "Hello world\nI'm fine\n\nlast line");
  std::ostringstream ids;
  EXPECT_EQ(tokenize_command(tokenizer, (dir_ / "text.txt").string(), false, ids), 0);
  EXPECT_EQ(ids.str(), "[15496,995]\n[40,1101,3734]\n[]\n[12957,1627]\n");

  write_file(dir_ / "ids.txt", ids.str());
  std::ostringstream text;
  tokenize_command(tokenizer, (dir_ / "ids.txt").string(), true, text);
  EXPECT_EQ(text.str(), "Hello world\nI'm fine\n\nlast line\n");

  const std::string bad = (dir_ / "bad.txt").string();
  write_file(bad, "[15496]\n[15496, \"x\"]\n");
  auto message = message_of<UsageError>([&] { tokenize_command(tokenizer, bad, true, text); });
  EXPECT_NE(message.find(bad + ":2: expected a JSON array of token ids"), std::string::npos) << message;
  write_file(bad, "[99999]\n");
  message = message_of<UsageError>([&] { tokenize_command(tokenizer, bad, true, text); });
  EXPECT_NE(message.find(bad + ":1: token id 99999"), std::string::npos) << message;

  const std::string nowhere = (dir_ / "nowhere.txt").string();
  message = message_of<UsageError>([&] { tokenize_command(tokenizer, nowhere, false, text); });
  EXPECT_NE(message.find(nowhere), std::string::npos) << message;
}

// A tiny vocabulary written by the test: BPE mechanics with no download, in
// Hugging Face's layout and in tiktoken's.
class TinyVocab : public tandem::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    write_vocab();
  }
  // Hugging Face's two files, as the fixture starts with them.
  void write_vocab() {
    nlohmann::json encoder = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) encoder[spell(std::string(1, char(b)))] = b;
    for (size_t i = 0; i < merged_.size(); ++i) encoder[merged_[i]] = 256 + i;
    encoder["<|endoftext|>"] = 260;
    write_file(dir_ / "vocab.json", encoder.dump());
    write_file(dir_ / "merges.txt", "#version: 0.2\nh e\nl l\nhe ll\nhell o\n");
  }
  // The same vocabulary as gpt2.tiktoken in `dir`, with `edit` applied to its lines.
  fs::path write_tiktoken(const std::string& name, const std::function<void(std::vector<std::string>&)>& edit = {}) {
    std::vector<std::string> lines;
    for (int b = 0; b < 256; ++b) lines.push_back(base64(std::string(1, char(b))));
    for (const auto& token : merged_) lines.push_back(base64(token));
    for (size_t rank = 0; rank < lines.size(); ++rank) lines[rank] += " " + std::to_string(rank);
    if (edit) edit(lines);
    const fs::path dir = dir_ / name;
    fs::create_directories(dir);
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    write_file(dir / "gpt2.tiktoken", text);
    return dir;
  }
  std::string load_error(const fs::path& dir) {
    return message_of<UsageError>([&] { Gpt2Tokenizer::load(dir.string()); });
  }
  const std::vector<std::string> merged_ = {"he", "ll", "hell", "hello"};
};

TEST_F(TinyVocab, MergesByRank) {
  for (const fs::path& dir : {dir_, write_tiktoken("tiktoken")}) {
    SCOPED_TRACE(dir);
    const auto tokenizer = Gpt2Tokenizer::load(dir.string());
    EXPECT_EQ(tokenizer.vocab_size(), 261);
    EXPECT_EQ(tokenizer.eot(), 260);
    EXPECT_EQ(tokenizer.encode("hello"), (Ids{259}));
    EXPECT_EQ(tokenizer.encode("hellohe"), (Ids{259, 256}));
    EXPECT_EQ(tokenizer.encode("helll"), (Ids{258, 'l'}));
    EXPECT_EQ(tokenizer.encode("hhe"), (Ids{'h', 256}));
    EXPECT_EQ(tokenizer.decode({259, 260}), "hello<|endoftext|>");
  }
}

TEST_F(TinyVocab, RejectsIdsThatAreNotDense) {
  auto encoder = nlohmann::json::parse(read_file(dir_ / "vocab.json"));
  encoder["hello"] = 900;
  write_file(dir_ / "vocab.json", encoder.dump());
  const auto message = message_of<UsageError>([&] { Gpt2Tokenizer::load(dir_.string()); });
  EXPECT_NE(message.find("vocab.json: token \"hello\" has id 900, expected 0..260"), std::string::npos) << message;
}

TEST_F(TinyVocab, CorruptOpenAiFilesAreNamed) {
  write_file(dir_ / "vocab.json", "{\"a\": 0,");
  auto message = load_error(dir_);
  EXPECT_NE(message.find((dir_ / "vocab.json").string() + ": not valid JSON"), std::string::npos) << message;
  write_file(dir_ / "vocab.json", "[1, 2]");
  message = load_error(dir_);
  EXPECT_NE(message.find("not a JSON object"), std::string::npos) << message;

  write_vocab();
  write_file(dir_ / "merges.txt", "#version: 0.2\nh e\nno-space-here\n");
  message = load_error(dir_);
  EXPECT_NE(message.find((dir_ / "merges.txt").string() + ":3: expected two tokens"), std::string::npos) << message;
  write_file(dir_ / "merges.txt", "#version: 0.2\nqqqqq zzzzz\n");
  message = load_error(dir_);
  EXPECT_NE(message.find("merges.txt:2: merge \"qqqqq zzzzz\" names a token"), std::string::npos) << message;
}

TEST_F(TinyVocab, CorruptTiktokenFilesAreNamed) {
  struct Case {
    std::function<void(std::vector<std::string>&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](auto& l) { l[3] = "not*base64 3"; }, "gpt2.tiktoken:4: expected \"<base64 token> <rank>\""},
      {[](auto& l) { l[3] = "Aw=="; }, "gpt2.tiktoken:4: expected"},
      {[](auto& l) { l[3] = "Aw== x3"; }, "gpt2.tiktoken:4: expected"},
      {[](auto& l) { std::swap(l[5], l[6]); }, "gpt2.tiktoken:6: rank 6, expected 5"},
      {[](auto& l) { l[7] = l[6].substr(0, l[6].find(' ')) + " 7"; },
       "gpt2.tiktoken:8: the token of rank 7 is listed twice"},
      {[](auto& l) { l.resize(200); }, "no token for byte 200"},
      // "hello" before "hell": not two lower-ranked tokens merged.
      {[](auto& l) {
         l[258] = base64("hello") + " 258";
         l[259] = base64("hell") + " 259";
       },
       "the token of rank 258 is not two tokens of lower rank merged"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const fs::path dir = write_tiktoken("case" + std::to_string(i), cases[i].edit);
    const std::string message = load_error(dir);
    EXPECT_NE(message.find(cases[i].expected), std::string::npos) << message;
    EXPECT_NE(message.find((dir / "gpt2.tiktoken").string()), std::string::npos) << message;
  }
}

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DefaultTokenizerDir, FollowsTheEnvironment) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv dir("TANDEM_TOKENIZER_DIR", "/data/gpt2");
    ScopedEnv cache("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_tokenizer_dir(), "/data/gpt2");
  }
  ScopedEnv dir("TANDEM_TOKENIZER_DIR", nullptr);
  {
    ScopedEnv cache("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_tokenizer_dir(), "/xdg/tandem/gpt2");
  }
  {
    ScopedEnv cache("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(default_tokenizer_dir(), "/home/someone/.cache/tandem/gpt2");
  }
  ScopedEnv cache("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(default_tokenizer_dir(), "/home/someone/.cache/tandem/gpt2");
}

}  // namespace
}  // namespace summarize
