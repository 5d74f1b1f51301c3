#include "app/inference.h"

#include <torch/torch.h>

#include <algorithm>

#include "app/prepare.h"
#include "tandem/config/config.h"
#include "tandem/data/eval_shard.h"
#include "tandem/data/longest_first.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/obs/progress.h"
#include "tandem/train/halving_batches.h"
#include "tandem/train/train_keys.h"

namespace summarize {

InferenceOptions inference_options(const tandem::Config& config, int64_t eot, tandem::Precision precision) {
  InferenceOptions s;
  s.generate.precision = precision;
  s.format = PromptTemplate::parse(tandem::read_keys<PrepareKeys>(config).prompt_template);
  const GenKeys gen = tandem::read_keys<GenKeys>(config);
  s.generate.max_new_tokens = gen.max_new_tokens;
  s.generate.sample = gen.temperature > 0;
  s.generate.temperature = s.generate.sample ? gen.temperature : 1.0;
  s.generate.top_k = gen.top_k;
  s.generate.top_p = gen.top_p;
  s.generate.eot_token = eot;
  s.generate.seed = static_cast<uint64_t>(tandem::run_settings(config).seed);
  s.generate.validate();
  s.batch = gen.batch;
  return s;
}

namespace {

// Every rank's token lists (one per slot of its eval_shard) to every rank, in
// input order. A table needs one width: lists are padded with -1 to the
// longest of any rank, after a column with their length.
std::vector<std::vector<int64_t>> gather(tandem::World& world, const std::vector<std::vector<int64_t>>& mine,
                                         size_t n) {
  tandem::MpiComm host(world);
  int64_t longest = 0;
  for (const auto& v : mine) longest = std::max<int64_t>(longest, static_cast<int64_t>(v.size()));
  auto width = torch::full({1}, longest, torch::kLong);
  host.allreduce(width, tandem::ReduceOp::Max);
  const int64_t w = width.item<int64_t>() + 1;  // +1: a length column
  const auto len = static_cast<int64_t>(mine.size());
  auto table = torch::full({len, w}, int64_t{-1}, torch::kLong);
  auto cells = table.accessor<int64_t, 2>();
  for (int64_t i = 0; i < len; ++i) {
    cells[i][0] = static_cast<int64_t>(mine[i].size());
    for (size_t t = 0; t < mine[i].size(); ++t) cells[i][static_cast<int64_t>(t) + 1] = mine[i][t];
  }
  const at::Tensor all = tandem::gather_in_order(world, static_cast<int64_t>(n), table);
  const auto rows = all.accessor<int64_t, 2>();
  std::vector<std::vector<int64_t>> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t* first = &rows[static_cast<int64_t>(i)][1];
    out[i].assign(first, first + rows[static_cast<int64_t>(i)][0]);
  }
  return out;
}

}  // namespace

int64_t check_prompt_room(const Gpt2Tokenizer& tok, const InferenceOptions& s, int64_t block_size) {
  const int64_t room = block_size - s.generate.max_new_tokens;
  const auto fixed = static_cast<int64_t>(tok.encode(s.format.head).size() + tok.encode(s.format.tail).size());
  if (fixed >= room)
    throw tandem::UsageError("gen.max_new_tokens = " + std::to_string(s.generate.max_new_tokens) + " leaves " +
                             std::to_string(room) + " of the model's " + std::to_string(block_size) +
                             " positions for a prompt, and data.prompt_template alone takes " +
                             std::to_string(fixed) + " tokens");
  return room;
}

std::vector<std::string> summarize_all(tandem::World& world, GPT& model, const Gpt2Tokenizer& tok,
                                       const std::vector<Example>& examples, const InferenceOptions& s) {
  // Prompts leave room for the summary; long dialogues lose their end.
  const int64_t room = check_prompt_room(tok, s, model->config().block_size);
  const auto shard = tandem::eval_shard(static_cast<int64_t>(examples.size()), world.size(), world.rank());
  std::vector<Example> mine;
  for (int64_t i : shard.indices) mine.push_back(examples[i]);
  const auto prompts = tokenize(
      mine, [&tok](std::string_view t) { return tok.encode(t); }, s.format, room, false, tok.eot(), nullptr);
  if (prompts.size() != static_cast<int64_t>(mine.size()))
    throw std::logic_error("prompts were dropped although check_prompt_room passed");

  // Longest prompts first, so that a batch's prompts are of about one length
  // and little of its prompt pass is left padding; each output goes back to
  // its prompt's slot.
  const std::vector<int64_t> order =
      tandem::longest_first(prompts.size(), [&prompts](int64_t i) { return prompts.length(i); });
  std::vector<std::vector<int64_t>> outputs(mine.size());
  const bool show = s.progress && world.rank() == 0;
  tandem::Progress progress("generate", static_cast<int64_t>(mine.size()), std::cerr, tandem::console_redraws(), 10.0);
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<std::vector<int64_t>> batch;
    for (int64_t k = begin; k < end; ++k) {
      const auto* first = prompts.ids.data() + prompts.offsets[order[k]];
      batch.emplace_back(first, first + prompts.length(order[k]));
    }
    auto made = generate(model, batch, s.generate);
    for (int64_t k = begin; k < end; ++k) outputs[order[k]] = std::move(made[k - begin]);
    if (show) progress.update(end);
  };
  const int64_t settled = tandem::run_in_halving_batches(static_cast<int64_t>(mine.size()), s.batch,
                                                         model->transformer->wte->weight.device(), "generation", run);
  if (settled != s.batch && s.backed_off_to) *s.backed_off_to = settled;
  if (show) progress.finish();
  const auto all = gather(world, outputs, examples.size());
  std::vector<std::string> texts;
  texts.reserve(all.size());
  for (const auto& ids : all) {
    auto text = tok.decode(ids);
    // A summary is one paragraph; generated text may run on into a new section.
    const auto cut = text.find("\n\n");
    if (cut != std::string::npos) text.resize(cut);
    const auto first = text.find_first_not_of(" \n");
    const auto last = text.find_last_not_of(" \n");
    texts.push_back(first == std::string::npos ? "" : text.substr(first, last - first + 1));
  }
  return texts;
}

ScoredSummaries score_summaries(tandem::World& world, GPT& model, const Gpt2Tokenizer& tok,
                                const std::vector<Example>& examples, const InferenceOptions& s, bool stemmer) {
  ScoredSummaries out;
  out.predictions = summarize_all(world, model, tok, examples, s);
  std::vector<RougeScores> each;
  for (size_t i = 0; i < examples.size(); ++i) each.push_back(rouge(examples[i].summary, out.predictions[i], stemmer));
  out.mean = mean_scores(each);
  return out;
}

}  // namespace summarize
