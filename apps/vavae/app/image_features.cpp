#include "app/image_features.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "data/load_image.h"
#include "tandem/dist/world.h"
#include "tandem/io/file_checksum.h"
#include "tandem/io/safetensors.h"
#include "tandem/obs/log.h"
#include "tandem/random.h"

namespace vavae {

namespace {

// The images as an evaluation set, so that gather_eval_rows shards, prefetches
// and gathers them as it does the judge's. Never trained.
class FeatureTask : public tandem::Task {
 public:
  FeatureTask(FidInception net, const std::vector<ImageItem>& items, int64_t size)
      : net_(std::move(net)), items_(items), size_(size) {}

  std::shared_ptr<torch::nn::Module> build_model() override { return net_.ptr(); }
  int64_t train_size() const override { return 0; }
  int64_t eval_size() const override { return static_cast<int64_t>(items_.size()); }
  bool fixed_shapes() const override { return true; }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool /*train*/, uint64_t /*seed*/) override {
    std::vector<at::Tensor> images;
    std::vector<int64_t> users;
    for (const int64_t i : indices) {
      images.push_back(to_unit_range(load_image(items_.at(i).path, size_)));
      users.push_back(items_[i].user_id);
    }
    return {{"image", torch::stack(images)}, {"user", torch::tensor(users, torch::kLong)}};
  }
  tandem::Loss loss(torch::nn::Module& /*model*/, const tandem::Batch& /*batch*/) override {
    throw std::logic_error("FeatureTask: Inception features are computed, never trained");
  }
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override {
    auto* net = model.as<FidInceptionImpl>();
    return {{"features", net->forward(batch.at("image")).to(at::kFloat)}, {"user", batch.at("user")}};
  }

 private:
  FidInception net_;
  const std::vector<ImageItem>& items_;
  int64_t size_;
};

std::string fingerprint(const std::vector<ImageItem>& items, int64_t size, const std::string& weights_path) {
  tandem::Fnv1a64 fnv;
  fnv.add(&size, sizeof size).add(tandem::file_crc64(weights_path));
  for (const auto& item : items) fnv.add(tandem::file_crc64(item.path)).add(&item.user_id, sizeof item.user_id);
  return fnv.hex();
}

// The cache's features when it holds these items' under this fingerprint.
bool cache_matches(const std::string& cache, const std::string& key, int64_t count) {
  if (!std::filesystem::is_regular_file(cache)) return false;
  try {
    const auto metadata = tandem::read_safetensors_metadata(cache);
    const auto found = metadata.find("fingerprint");
    if (found == metadata.end() || found->second != key) {
      tandem::log::info("evaluate: ", cache,
                        " holds the features of other images, weights or image size: computing them again");
      return false;
    }
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& entry : tandem::read_safetensors_index(cache)) shapes[entry.name] = entry.shape;
    return shapes["features"] == std::vector<int64_t>{count, FidInceptionImpl::kFeatures} &&
           shapes["users"] == std::vector<int64_t>{count};
  } catch (const std::exception& e) {
    tandem::log::warn("evaluate: ", cache, " cannot be read (", e.what(), "): computing the features again");
    return false;
  }
}

}  // namespace

ImageFeatures image_features(FidInception& net, const std::vector<ImageItem>& items, int64_t size,
                             const tandem::EvalContext& ctx) {
  FeatureTask task(net, items, size);
  tandem::EvalContext own = ctx;
  own.precision = tandem::Precision::FP32;
  own.micro_batch = kFeatureBatch;
  own.backed_off_to = nullptr;  // the caller's micro-batch is its model's, not Inception's
  const tandem::EvalRows rows = tandem::gather_eval_rows(task, *net, own);
  return {rows.at("features"), rows.at("user")};
}

ImageFeatures cached_image_features(FidInception& net, const std::vector<ImageItem>& items, int64_t size,
                                    const tandem::EvalContext& ctx, const std::string& cache,
                                    const std::string& weights_path) {
  tandem::World& world = *ctx.world;
  std::string key;
  uint8_t hit = 0;
  if (world.is_main()) {
    key = fingerprint(items, size, weights_path);
    hit = cache_matches(cache, key, static_cast<int64_t>(items.size())) ? 1 : 0;
  }
  world.broadcast_bytes(&hit, 1, 0);
  if (hit) {
    ImageFeatures out;
    for (const auto& [name, tensor] : tandem::read_safetensors(cache)) {
      if (name == "features") out.features = tensor;
      if (name == "users") out.users = tensor;
    }
    if (world.is_main()) tandem::log::info("evaluate: the real images' features from ", cache);
    return out;
  }
  ImageFeatures out = image_features(net, items, size, ctx);
  if (world.is_main())
    tandem::write_safetensors(cache, {{"features", out.features}, {"users", out.users}}, {{"fingerprint", key}});
  world.barrier();
  return out;
}

}  // namespace vavae
