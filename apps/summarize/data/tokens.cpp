#include "data/tokens.h"

#include <torch/torch.h>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/h5file.h"
#include "tandem/random.h"

namespace summarize {

PromptTemplate PromptTemplate::parse(const std::string& text) {
  const std::string slot = "{dialogue}";
  const auto at = text.find(slot);
  if (at == std::string::npos)
    throw tandem::UsageError("data.prompt_template must contain {dialogue}, got \"" + text + "\"");
  return {text.substr(0, at), text.substr(at + slot.size())};
}

void TokenSet::add(const std::vector<int64_t>& tokens, int64_t prompt, int64_t from) {
  ids.insert(ids.end(), tokens.begin(), tokens.end());
  offsets.push_back(static_cast<int64_t>(ids.size()));
  prompt_len.push_back(static_cast<int32_t>(prompt));
  source.push_back(from);
}

TokenSet tokenize(const std::vector<Example>& examples, const Encode& encode, const PromptTemplate& format,
                  int64_t max_tokens, bool with_summary, int64_t eot, TokenizeStats* stats) {
  const auto head = encode(format.head);
  const auto tail = encode(format.tail);
  TokenSet out;
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto& e = examples[i];
    auto dialogue = encode(e.dialogue);
    std::vector<int64_t> summary;
    if (with_summary) {
      summary = encode(e.summary);
      summary.push_back(eot);
    }
    const int64_t fixed = static_cast<int64_t>(head.size() + tail.size() + summary.size());
    if (fixed >= max_tokens) {
      if (stats) ++stats->dropped;
      continue;
    }
    const auto room = static_cast<size_t>(max_tokens - fixed);
    if (dialogue.size() > room) {
      dialogue.resize(room);
      if (stats) ++stats->truncated;
    }
    std::vector<int64_t> seq(head);
    seq.insert(seq.end(), dialogue.begin(), dialogue.end());
    seq.insert(seq.end(), tail.begin(), tail.end());
    const auto prompt = static_cast<int64_t>(seq.size());
    seq.insert(seq.end(), summary.begin(), summary.end());
    out.add(seq, prompt, static_cast<int64_t>(i));
  }
  return out;
}

void save_tokens(const std::string& path, const TokenSet& set) {
  // A reader never sees half a cache, even after a crash.
  tandem::replace_atomically(path, [&](const std::string& temp) {
    tandem::H5File f(temp, tandem::H5File::Mode::kCreate);
    f.write("ids", torch::tensor(std::vector<int32_t>(set.ids), torch::kInt));
    f.write("offsets", torch::tensor(set.offsets, torch::kLong));
    f.write("prompt_len", torch::tensor(std::vector<int32_t>(set.prompt_len), torch::kInt));
    f.write("source", torch::tensor(set.source, torch::kLong));
    f.close();
  });
}

TokenSet load_tokens(const std::string& path) {
  tandem::H5File f(path);
  auto vec32 = [&](const char* name) {
    auto t = f.read(name).to(torch::kInt).contiguous();
    return std::vector<int32_t>(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + t.numel());
  };
  auto vec64 = [&](const char* name) {
    auto t = f.read(name).to(torch::kLong).contiguous();
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  };
  TokenSet set;
  set.ids = vec32("ids");
  set.offsets = vec64("offsets");
  set.prompt_len = vec32("prompt_len");
  set.source = vec64("source");
  if (set.offsets.size() != set.prompt_len.size() + 1 || set.source.size() != set.prompt_len.size())
    throw tandem::UsageError(path + ": token cache is inconsistent; delete it to rebuild");
  return set;
}

std::string cache_key(const std::vector<Example>& examples, const std::string& tokenizer_id,
                      const PromptTemplate& format, int64_t max_tokens, bool with_summary) {
  // Every input, each closed by a byte no UTF-8 text holds, so that moved
  // boundaries change the hash.
  tandem::Fnv1a64 h;
  auto mix = [&h](const std::string& s) {
    static constexpr unsigned char kEnd = 0xff;
    h.add(s).add(&kEnd, 1);
  };
  mix("tokens-v1");
  mix(tokenizer_id);
  mix(format.head);
  mix(format.tail);
  mix(std::to_string(max_tokens));
  mix(with_summary ? "s" : "p");
  for (const auto& e : examples) {
    mix(e.id);
    mix(e.dialogue);
    mix(e.summary);
  }
  return h.hex();
}

}  // namespace summarize
