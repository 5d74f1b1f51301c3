#include "app/summarize_task.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "model/gpt2_hf.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/file_checksum.h"
#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"
#include "tandem/train/evaluate.h"

namespace summarize {

GPT make_model(const ModelOptions& spec) {
  const std::string& init_from = spec.init_from;
  if (init_from == "scratch") return GPT(spec.shape);
  if (init_from.rfind("hf:", 0) != 0)
    throw tandem::UsageError("model.init_from must be \"scratch\" or \"hf:DIR\", got \"" + init_from + "\"");
  auto model = load_hf(init_from.substr(3));
  if (model->config().block_size < spec.shape.block_size)
    throw tandem::UsageError("model.init_from " + init_from + " has " + std::to_string(model->config().block_size) +
                             " positions, fewer than model.block_size " + std::to_string(spec.shape.block_size));
  if (spec.lora.enabled()) add_lora(model, spec.lora);
  return model;
}

std::string base_checksum(const ModelOptions& spec) {
  return tandem::file_crc64((std::filesystem::path(spec.init_from.substr(3)) / "model.safetensors").string());
}

namespace {

// A packed batch's nn::PackedRows, as batch tensors (so they travel to the
// device with it): the scatter, and bucket 0, 1, ...
const std::string kRowsScatter = "rows.scatter", kRowsBucket = "rows.bucket.";

tandem::nn::PackedRows packed_rows_in(const tandem::Batch& batch) {
  tandem::nn::PackedRows rows;
  const auto scatter = batch.find(kRowsScatter);
  if (scatter == batch.end()) return rows;
  rows.scatter = scatter->second;
  for (size_t b = 0; batch.count(kRowsBucket + std::to_string(b)); ++b)
    rows.buckets.push_back(batch.at(kRowsBucket + std::to_string(b)));
  return rows;
}

std::shared_ptr<const std::vector<int64_t>> lengths_of(const TokenSet& set) {
  auto lengths = std::make_shared<std::vector<int64_t>>(set.size());
  for (int64_t i = 0; i < set.size(); ++i) (*lengths)[i] = set.length(i);
  return lengths;
}

}  // namespace

SummarizeTask::SummarizeTask(ModelOptions spec, TokenSet train, TokenSet val, int64_t pad,
                             std::optional<RougeDuringTraining> rouge, BatchingKeys batching)
    : spec_(std::move(spec)),
      train_(std::move(train)),
      val_(std::move(val)),
      pad_(pad),
      rouge_(std::move(rouge)),
      rows_(row_bounds(train_)) {
  if (rouge_) generation_ = {rouge_->settings.batch, rouge_->settings.generate.max_new_tokens};
  if (batching.batching == "random") return;
  train_lengths_ = lengths_of(train_);
  val_lengths_ = lengths_of(val_);
  if (batching.batching == "packed") pack_tokens_ = spec_.shape.block_size;
}

std::shared_ptr<torch::nn::Module> SummarizeTask::build_model() {
  GPT model = make_model(spec_);
  if (spec_.lora.enabled()) frozen_base_ = base_checksum(spec_);
  return model.ptr();
}

tandem::Batch SummarizeTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t) {
  const TokenSet& set = train ? train_ : val_;
  int64_t len = 1;
  for (int64_t i : indices) len = std::max(len, set.length(i));
  const auto n = static_cast<int64_t>(indices.size());
  // Padding is the end token, masked out of the loss: it never teaches anything.
  auto idx = torch::full({n, len}, pad_, torch::kLong);
  auto mask = torch::zeros({n, len}, torch::kBool);
  auto idx_a = idx.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t i = indices[r];
    const int64_t begin = set.offsets[i], length = set.length(i);
    for (int64_t t = 0; t < length; ++t) idx_a[r][t] = set.ids[begin + t];
    for (int64_t t = set.prompt_len[i]; t < length; ++t) mask_a[r][t] = true;
  }
  return {{"idx", idx}, {"loss_mask", mask}};
}

tandem::Batch SummarizeTask::make_packed_batch(const tandem::MicroBatch& mb, bool train, uint64_t) {
  const TokenSet& set = train ? train_ : val_;
  const int64_t n = mb.sequence.back() + 1;
  std::vector<int64_t> fill(static_cast<size_t>(n), 0), rows(static_cast<size_t>(n), 0);
  for (size_t k = 0; k < mb.indices.size(); ++k) {
    fill[mb.sequence[k]] += set.length(mb.indices[k]);
    ++rows[mb.sequence[k]];
  }
  const int64_t width = *std::max_element(fill.begin(), fill.end());
  auto idx = torch::full({n, width}, pad_, torch::kLong);
  auto mask = torch::zeros({n, width}, torch::kBool);
  auto positions = torch::zeros({n, width}, torch::kLong);
  auto segments = torch::full({n, width}, -1, torch::kLong);
  auto idx_a = idx.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  auto pos_a = positions.accessor<int64_t, 2>();
  auto seg_a = segments.accessor<int64_t, 2>();
  std::fill(fill.begin(), fill.end(), 0);
  std::vector<int64_t> row_in(static_cast<size_t>(n), 0);
  for (size_t k = 0; k < mb.indices.size(); ++k) {
    const int64_t r = mb.sequence[k], i = mb.indices[k];
    const int64_t begin = set.offsets[i], length = set.length(i), at = fill[r];
    // A summary token is never a row's first (every prompt has tokens), so
    // the position before each predicted token is in its own row.
    for (int64_t t = 0; t < length; ++t) {
      idx_a[r][at + t] = set.ids[begin + t];
      pos_a[r][at + t] = t;
      seg_a[r][at + t] = row_in[r];
      mask_a[r][at + t] = t >= set.prompt_len[i];
    }
    fill[r] += length;
    ++row_in[r];
  }
  if (*std::max_element(rows.begin(), rows.end()) == 1) return {{"idx", idx}, {"loss_mask", mask}};
  tandem::Batch batch = {{"idx", idx}, {"loss_mask", mask}, {"positions", positions}, {"segments", segments}};
  const tandem::nn::PackedRows packed = tandem::nn::packed_rows(segments);
  batch[kRowsScatter] = packed.scatter;
  for (size_t b = 0; b < packed.buckets.size(); ++b) batch[kRowsBucket + std::to_string(b)] = packed.buckets[b];
  return batch;
}

// Where the loss predicts, as indices into the [n, len - 1] positions that
// predict a next token: the summary's, in valid rows. Made here on the host,
// since a boolean mask index on the device waits for it (a nonzero per
// micro-step), which would keep the host from queueing the head and backward.
void SummarizeTask::complete_batch(tandem::Batch& batch) const {
  const auto mask = batch.at("loss_mask").accessor<bool, 2>();
  const auto valid = batch.at("valid").accessor<bool, 1>();
  const int64_t width = mask.size(1) - 1;
  std::vector<int64_t> at;
  for (int64_t r = 0; r < mask.size(0); ++r) {
    if (!valid[r]) continue;
    for (int64_t t = 1; t <= width; ++t)
      if (mask[r][t]) at.push_back(r * width + t - 1);
  }
  batch["predict_at"] = torch::tensor(at, torch::kLong);
}

tandem::Loss SummarizeTask::loss(torch::nn::Module& module, const tandem::Batch& batch) {
  auto& model = static_cast<GPTImpl&>(module);
  const auto& idx = batch.at("idx");
  const auto& at = batch.at("predict_at");
  // The head runs only where a summary token is predicted: with GPT-2's 50257
  // outputs it is most of the work, and the prompt's logits are never used.
  const tandem::nn::PackedRows rows = packed_rows_in(batch);
  auto hidden = rows.defined() ? model.features(idx, nullptr, batch.at("positions"), {}, rows) : model.features(idx);
  const auto count = torch::full({}, static_cast<double>(at.numel()), hidden.options().dtype(torch::kFloat));
  if (at.numel() == 0) return {hidden.sum().to(torch::kFloat) * 0, count};
  auto h = hidden.narrow(1, 0, hidden.size(1) - 1).reshape({-1, hidden.size(2)}).index_select(0, at);
  auto targets = idx.narrow(1, 1, idx.size(1) - 1).reshape({-1}).index_select(0, at);
  namespace F = torch::nn::functional;
  return {F::cross_entropy(model.head(h).to(torch::kFloat), targets, F::CrossEntropyFuncOptions().reduction(torch::kSum)),
          count};
}

tandem::Metrics SummarizeTask::collective_metrics(torch::nn::Module& module, const tandem::EvalContext& ctx) {
  if (!rouge_) return {};
  auto gpt = std::dynamic_pointer_cast<GPTImpl>(module.shared_from_this());
  if (!gpt) throw std::logic_error("SummarizeTask evaluates a model that is not its GPT");
  GPT model(gpt);
  InferenceOptions settings = rouge_->settings;
  if (ctx.weights_in_precision) settings.generate.precision = ctx.precision;
  // A batch that ran out of memory once would again: later evaluations
  // start where this one went on.
  settings.backed_off_to = &rouge_->settings.batch;
  const auto start = std::chrono::steady_clock::now();
  const auto scored =
      score_summaries(*ctx.world, model, *rouge_->tokenizer, rouge_->examples, settings, rouge_->stemmer);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  tandem::log::info("ROUGE of ", rouge_->examples.size(), " greedy summaries (eval.rouge_samples): ",
                    tandem::number_text(std::round(took.count() * 10) / 10), " s");
  tandem::Metrics metrics;
  for (const auto& name : kRougeNames) metrics[name] = scored.mean.at(name).f1;
  return metrics;
}

std::vector<std::string> SummarizeTask::metric_names() const {
  std::vector<std::string> names = {"loss"};
  if (rouge_) names.insert(names.end(), kRougeNames.begin(), kRougeNames.end());
  return names;
}

std::string SummarizeTask::metric_mode(const std::string& name) const {
  return name == "loss" ? "min" : "max";
}

RowBounds row_bounds(const TokenSet& set) {
  RowBounds rows;
  for (int64_t i = 0; i < set.size(); ++i) {
    const int64_t summary = set.length(i) - set.prompt_len[i];
    rows.length = std::max(rows.length, set.length(i));
    rows.predicted = std::max(rows.predicted, summary);
    rows.share =
        std::max(rows.share, static_cast<double>(summary) / static_cast<double>(std::max<int64_t>(set.length(i), 1)));
  }
  return rows;
}

namespace {

void add_evaluation(tandem::Activations& bytes, const GPTConfig& shape, const RowBounds& rows,
                    const GenerationBounds& generation, const tandem::ActivationQuery& query) {
  bytes.evaluation = shape.inference_bytes(query, query.micro_batch, rows.length, rows.predicted);
  bytes.evaluation_by = "the forward of a micro-batch of " + std::to_string(query.micro_batch) + " rows";
  if (generation.batch == 0) return;
  // A prompt is no longer than a training row (its dialogue and summary),
  // nor than generation leaves room for.
  const int64_t prompt = std::min(rows.length, shape.block_size - generation.new_tokens);
  const int64_t generating =
      shape.generation_bytes(query, generation.batch, prompt + generation.new_tokens, generation.new_tokens);
  if (generating <= bytes.evaluation) return;
  bytes.evaluation = generating;
  bytes.evaluation_by = "greedy generation for eval.rouge_samples, gen.batch = " + std::to_string(generation.batch) +
                        " prompts at a time with their KV cache";
}

tandem::Activations training_activations(const ModelOptions& spec, const RowBounds& rows, int64_t pack_tokens,
                                         const tandem::ActivationQuery& query) {
  if (pack_tokens == 0) return spec.shape.activation_bytes(query, rows.length, rows.predicted, !spec.lora.enabled());
  // Packed: rows of at most that share fill a sequence with at most that
  // share of summary. Attention gathers q, k, v into buckets of rows and its
  // output back (nn/packed_rows.h), each bucket up to a quarter padding: a
  // layer keeps up to 4/3 of its 4c values a token for backward where the
  // model without packing keeps them once, so a third of them again.
  tandem::Activations bytes = spec.shape.activation_bytes(
      query, pack_tokens, static_cast<int64_t>(std::ceil(rows.share * static_cast<double>(pack_tokens))),
      !spec.lora.enabled());
  if (bytes.start >= 0) {
    const int64_t layers = query.recompute ? 1 : spec.shape.n_layer;
    bytes.start += layers * query.micro_batch * pack_tokens * 4 * spec.shape.n_embd * query.element_bytes / 3;
  }
  return bytes;
}

}  // namespace

tandem::Activations summarize_activations(const ModelOptions& spec, const RowBounds& rows, int64_t pack_tokens,
                                          const GenerationBounds& generation, const tandem::ActivationQuery& query) {
  tandem::Activations bytes = training_activations(spec, rows, pack_tokens, query);
  add_evaluation(bytes, spec.shape, rows, generation, query);
  return bytes;
}

tandem::Activations SummarizeTask::activation_bytes(const tandem::ActivationQuery& query) const {
  if (!query.batch) return summarize_activations(spec_, rows_, pack_tokens_, generation_, query);
  // A batch's own: its rows (or packed sequences) at its padded length, the
  // summary tokens it predicts shared out among them.
  const at::Tensor& mask = query.batch->at("loss_mask");
  const int64_t n = mask.size(0), length = mask.size(1);
  const int64_t predicted = mask.sum().item<int64_t>();
  RowBounds rows;
  rows.length = length;
  rows.predicted = (predicted + n - 1) / std::max<int64_t>(n, 1);
  rows.share = static_cast<double>(predicted) / static_cast<double>(std::max<int64_t>(n * length, 1));
  tandem::ActivationQuery of_batch = query;
  of_batch.micro_batch = n;
  return summarize_activations(spec_, rows, query.batch->count("segments") ? length : 0, generation_, of_batch);
}

namespace {

// What a valid row of a batch costs: its real length (the summary and its
// <|endoftext|> end the sequence, so the last loss position is its last
// token; the end token is also the padding, so ids cannot tell) and how many
// positions predict a summary token, where the head runs (see loss()).
struct RowWork {
  int64_t length, predicted;
};

std::vector<RowWork> row_work(const tandem::Batch& batch) {
  const auto mask = batch.at("loss_mask").accessor<bool, 2>();
  const auto valid = batch.at("valid").accessor<bool, 1>();
  const auto packed = batch.find("segments");
  const at::Tensor segments =
      packed == batch.end() ? torch::zeros({mask.size(0), mask.size(1)}, torch::kLong) : packed->second;
  const auto seg = segments.accessor<int64_t, 2>();
  std::vector<RowWork> rows;
  for (int64_t r = 0; r < mask.size(0); ++r) {
    if (!valid[r]) continue;
    // Packed, each segment is a row of its own, starting at `start`;
    // unpacked, the whole is segment 0.
    int64_t segment = 0, start = 0;
    RowWork row{0, 0};
    for (int64_t t = 0; t < mask.size(1); ++t) {
      const int64_t s = seg[r][t];
      if (s != segment) {
        rows.push_back(row);
        row = {0, 0};
        segment = s;
        start = t;
      }
      if (s < 0) break;
      if (!mask[r][t]) continue;
      row.length = t - start + 1;
      if (t > start) ++row.predicted;
    }
    if (segment >= 0) rows.push_back(row);
  }
  return rows;
}

}  // namespace

double SummarizeTask::flops_in(const tandem::Batch& batch) const {
  double flops = 0;
  for (const RowWork& row : row_work(batch))
    flops += spec_.shape.training_flops(row.length, row.predicted, !spec_.lora.enabled());
  return flops;
}

int64_t SummarizeTask::tokens_in(const tandem::Batch& batch) const {
  int64_t tokens = 0;
  for (const RowWork& row : row_work(batch)) tokens += row.length;
  return tokens;
}

int64_t SummarizeTask::tokens_computed_in(const tandem::Batch& batch) const { return batch.at("idx").numel(); }

}  // namespace summarize
