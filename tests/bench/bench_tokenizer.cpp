// GPT-2 tokenizer throughput, ours against tiktoken (PyPI, one thread), in one run:
//   build/tests/bench/bench_tokenizer [--dir DIR] [--text FILE] [--mb N] [--threads N]
//                                     [--python PATH] [--corpus real|unique] [--results FILE]
// The corpus is FILE, else ../shared/data/scitldr's CSVs, else synthetic words,
// repeated to N MB (default 8). --corpus unique is N MB of made-up words
// instead, each of random letters, so that almost none repeats: a word cache
// (ours and tiktoken's alike) rarely hits and the BPE merges do the work. Both encoders encode it line by line, a first
// pass from an empty cache and a warm second pass; ours then runs the warm pass
// on several threads. tiktoken is built from DIR's gpt2.tiktoken by
// bench_tokenizer_tiktoken.py under PATH (default: tandem's venv, where
// env/setup.sh --tests installs tiktoken). --results appends the cold and
// warm ratios to env/bench.sh's table (tests/bench/results.py's rows).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/gpt2_tokenizer.h"
#include "bench_args.h"

namespace fs = std::filesystem;
using summarize::Gpt2Tokenizer;

namespace {

struct Pass {
  double cold_s = 0, warm_s = 0;
  int64_t tokens = 0;
  uint32_t checksum = 0;
};

// The first of `relative` under the folders above the working directory or this binary.
std::optional<fs::path> find_above(const fs::path& relative) {
  std::error_code error;
  for (fs::path start : {fs::current_path(), fs::read_symlink("/proc/self/exe", error)}) {
    for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
      if (fs::exists(dir / relative)) return dir / relative;
      if (dir == dir.parent_path()) break;
    }
  }
  return std::nullopt;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string synthetic_text(size_t bytes) {
  const char* words[] = {"the",     "model",  "summary", "of",   "a",     "dialogue", "is",
                         "short",   "Person", "#1",      "said", "2,048", "tokens",   "don't",
                         "they'll", "café",   "naïve",   "数据", "(BPE)", "—",        "GPT-2"};
  std::mt19937 rng(0);
  std::string text;
  while (text.size() < bytes) {
    text += words[rng() % std::size(words)];
    text += rng() % 12 == 0 ? ".\n" : " ";
  }
  return text;
}

// Words of 2 to 12 random letters, some capitalised, with GPT-2's usual
// punctuation between them: 26^k spellings make a repeated word rare.
std::string unique_words_text(size_t bytes) {
  std::mt19937 rng(1);
  std::string text;
  while (text.size() < bytes) {
    const size_t length = 2 + rng() % 11;
    for (size_t i = 0; i < length; ++i) text += char((i == 0 && rng() % 5 == 0 ? 'A' : 'a') + rng() % 26);
    const uint32_t gap = rng() % 20;
    text += gap == 0 ? ".\n" : gap == 1 ? ", " : " ";
  }
  return text;
}

std::pair<std::string, std::string> corpus(const std::string& kind, const std::string& file, size_t bytes) {
  if (kind == "unique") return {unique_words_text(bytes), "made-up words, almost none repeated"};
  std::string text, source;
  if (!file.empty()) {
    text = read_file(file);
    source = file;
  } else if (const auto data = find_above("shared/data/scitldr")) {
    for (const char* name : {"train.csv", "validation.csv", "test.csv"}) text += read_file(*data / name);
    source = (*data / "*.csv").string();
  }
  if (text.empty()) return {synthetic_text(bytes), "synthetic words"};
  const std::string once = text;
  while (text.size() < bytes) text += once;
  return {text, source + " x" + std::to_string((text.size() + once.size() - 1) / once.size())};
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return lines;
    start = end + 1;
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Pass run_ours(const Gpt2Tokenizer& tokenizer, const std::vector<std::string_view>& lines) {
  Pass pass;
  for (double* seconds : {&pass.cold_s, &pass.warm_s}) {
    pass.tokens = 0;
    pass.checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const auto line : lines) {
      for (const int64_t id : tokenizer.encode(line)) {
        pass.checksum = pass.checksum * 31u + uint32_t(id);
        ++pass.tokens;
      }
    }
    *seconds = seconds_since(start);
  }
  return pass;
}

double run_threads(const Gpt2Tokenizer& tokenizer, const std::vector<std::string_view>& lines, int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = t; i < lines.size(); i += threads) tokenizer.encode(lines[i]);
    });
  }
  for (auto& worker : workers) worker.join();
  return seconds_since(start);
}

// tiktoken's figures, or why there are none.
std::optional<Pass> run_tiktoken(const std::string& python, const std::string& tokenizer_dir, const std::string& text,
                                 std::string* why) {
  const fs::path script = fs::path(TANDEM_BENCH_DIR) / "bench_tokenizer_tiktoken.py";
  char pattern[] = "/tmp/bench-tokenizer-XXXXXX";
  const int fd = mkstemp(pattern);
  if (fd < 0 || write(fd, text.data(), text.size()) != ssize_t(text.size())) {
    *why = "cannot write the corpus to /tmp";
    return std::nullopt;
  }
  close(fd);
  const std::string command = "'" + python + "' '" + script.string() + "' '" + tokenizer_dir + "' '" + pattern + "'";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    if (pclose(pipe) != 0) *why = "failed (is tiktoken installed? env/setup.sh --tests): " + command;
  }
  std::remove(pattern);
  const auto json = nlohmann::json::parse(output, nullptr, false);
  if (why->empty() && (json.is_discarded() || !json.contains("tokens")))
    *why = "unexpected output from " + command + ": " + output;
  if (!why->empty()) return std::nullopt;
  return Pass{json["cold_s"], json["warm_s"], json["tokens"], json["checksum"]};
}

// env/bench.sh's rows (tests/bench/results.py): cold and warm MB/s against tiktoken.
void append_results(const std::string& path, const std::string& text, double size_mb, const Pass& ours,
                    const Pass& peer, bool same) {
  std::ofstream out(path, std::ios::app);
  for (const bool warm : {false, true}) {
    const double our_s = warm ? ours.warm_s : ours.cold_s, peer_s = warm ? peer.warm_s : peer.cold_s;
    char figure[160], tandem[32], theirs[64];
    std::snprintf(figure, sizeof figure, "GPT-2 tokenizer, %s, 1 thread, %s pass (ids identical: %s)", text.c_str(),
                  warm ? "warm" : "cold", same ? "yes" : "NO");
    std::snprintf(tandem, sizeof tandem, "%.1f MB/s", size_mb / our_s);
    std::snprintf(theirs, sizeof theirs, "tiktoken: %.1f MB/s", size_mb / peer_s);
    out << nlohmann::json{{"bench", "tokenizer"}, {"figure", figure}, {"tandem", tandem},
                          {"peer", theirs},       {"ratio", peer_s / our_s}, {"goal", 1.0}}
               .dump()
        << "\n";
  }
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = summarize::default_tokenizer_dir(), text_file, python = TANDEM_BENCH_PYTHON, kind = "real",
              results_path;
  double mb = 8;
  int threads = int(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--dir")
      dir = value;
    else if (key == "--text")
      text_file = value;
    else if (key == "--mb")
      mb = std::atof(value);
    else if (key == "--threads")
      threads = std::atoi(value);
    else if (key == "--python")
      python = value;
    else if (key == "--corpus")
      kind = value;
    else if (key == "--results")
      results_path = value;
    else
      return false;
    return true;
  };
  const char* usage = "[--dir DIR] [--text FILE] [--mb N] [--threads N] [--python PATH] [--corpus real|unique] [--results FILE]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_tokenizer", usage, take)) return *stop;
  if (kind != "real" && kind != "unique") {
    std::fprintf(stderr, "bench_tokenizer: --corpus must be real or unique, got '%s'\n", kind.c_str());
    return 2;
  }
  if (kind == "unique" && !text_file.empty()) {
    std::fprintf(stderr, "bench_tokenizer: --text and --corpus unique exclude each other (unique makes its words)\n");
    return 2;
  }

  try {
    const auto load_start = std::chrono::steady_clock::now();
    const Gpt2Tokenizer tokenizer = Gpt2Tokenizer::load(dir);
    const double load_s = seconds_since(load_start);
    const auto [text, source] = corpus(kind, text_file, size_t(mb * (1 << 20)));
    const auto lines = split_lines(text);
    const double size_mb = text.size() / double(1 << 20);
    std::printf("corpus: %s, %.1f MB, %zu lines; vocabulary loaded in %.0f ms\n", source.c_str(), size_mb, lines.size(),
                load_s * 1e3);

    const Pass ours = run_ours(tokenizer, lines);
    const double threaded_s = threads > 1 ? run_threads(tokenizer, lines, threads) : 0;
    std::string why;
    const auto peer = run_tiktoken(python, dir, text, &why);

    std::printf("%-28s %12s %12s %12s\n", "", "cold MB/s", "warm MB/s", "tokens");
    std::printf("%-28s %12.1f %12.1f %12lld\n", "ours (1 thread)", size_mb / ours.cold_s, size_mb / ours.warm_s,
                (long long)ours.tokens);
    if (threads > 1) {
      const std::string label = "ours (" + std::to_string(threads) + " threads)";
      std::printf("%-28s %12s %12.1f\n", label.c_str(), "", size_mb / threaded_s);
    }
    if (!peer) {
      std::printf("tiktoken baseline unavailable: %s\n", why.c_str());
      return 0;
    }
    std::printf("%-28s %12.2f %12.2f %12lld\n", "tiktoken (1 thread)", size_mb / peer->cold_s, size_mb / peer->warm_s,
                (long long)peer->tokens);
    std::printf("%-28s %11.2fx %11.2fx\n", "ratio ours/tiktoken", peer->cold_s / ours.cold_s,
                peer->warm_s / ours.warm_s);
    const bool same = peer->tokens == ours.tokens && peer->checksum == ours.checksum;
    std::printf("ids identical: %s\n", same ? "yes" : "NO");
    if (!results_path.empty()) append_results(results_path, kind == "unique" ? "made-up words" : "real text", size_mb,
                                              ours, *peer, same);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", error.what());
    return 2;
  }
  return 0;
}
