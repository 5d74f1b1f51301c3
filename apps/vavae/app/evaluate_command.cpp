#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>

#include "app/classifier_task.h"
#include "app/distance_report.h"
#include "app/image_features.h"
#include "app/judge.h"
#include "app/commands.h"
#include "app/pipeline.h"
#include "data/user_folders.h"
#include "tandem/config/config.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/checkpoint.h"
#include "tandem/obs/log.h"
#include "tandem/obs/tensorboard.h"
#include "tandem/train/classification.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/trainer.h"

namespace vavae {
namespace fs = std::filesystem;
using tandem::UsageError;

namespace {

// The images sample wrote, user{UU}_{iii}.png, labelled with their user.
std::vector<ImageItem> generated_images(const std::string& dir, int64_t num_users) {
  if (!fs::is_directory(dir)) throw UsageError("no generated images: " + dir + " is not a folder (run sample first)");
  const std::regex name("user([0-9]+)_([0-9]+)\\.png");
  std::vector<ImageItem> items;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || !std::regex_match(file, m, name)) continue;
    const int64_t user = std::stoll(m[1].str());
    if (user < 1 || user > num_users)
      throw UsageError(entry.path().string() + ": user " + std::to_string(user) + " is not among the " +
                       std::to_string(num_users) + " users of the training images");
    items.push_back({entry.path().string(), user});
  }
  if (items.empty()) throw UsageError("no generated images (user{UU}_{iii}.png) in " + dir + ": run sample first");
  std::sort(items.begin(), items.end(), [](const ImageItem& a, const ImageItem& b) { return a.path < b.path; });
  return items;
}

struct UserScore {
  int64_t count = 0, correct = 0;
  double accuracy() const { return static_cast<double>(correct) / static_cast<double>(count); }
};

std::map<int64_t, UserScore> per_user(const tandem::EvalRows& rows) {
  std::map<int64_t, UserScore> out;
  const at::Tensor pred = rows.at("pred").to(at::kLong), label = rows.at("label").to(at::kLong);
  for (int64_t i = 0; i < label.size(0); ++i) {
    auto& s = out[label[i].item<int64_t>() + 1];
    ++s.count;
    s.correct += pred[i].item<int64_t>() == label[i].item<int64_t>();
  }
  return out;
}

// What the judge found on each set.
struct Judged {
  double accuracy = 0;
  std::map<int64_t, UserScore> users;
};

Judged judge(ClassifierTask& task, torch::nn::Module& net, const tandem::EvalContext& ctx,
             const std::vector<ImageItem>& images) {
  task.set_eval(images);
  const tandem::EvalRows rows = tandem::gather_eval_rows(task, net, ctx);
  return {tandem::classification_accuracy(rows), per_user(rows)};
}

// FID, KID, precision and recall of the generated images against the real
// training images, when eval.inception_weights names the network's weights.
std::optional<DistanceReport> distances(std::optional<FidInception>& inception, const tandem::Config& config,
                                        const tandem::EvalContext& ctx, const std::vector<ImageItem>& real,
                                        const std::vector<ImageItem>& generated, int64_t size) {
  if (!inception) return std::nullopt;
  const std::string weights = tandem::read_keys<EvaluateKeys>(config).inception_weights;
  (*inception)->to(ctx.device);
  const std::string cache = real_features_file(config);
  const ImageFeatures real_features = cached_image_features(*inception, real, size, ctx, cache, weights);
  const ImageFeatures generated_features = image_features(*inception, generated, size, ctx);
  if (!ctx.world->is_main()) return std::nullopt;
  return distance_report(real_features, generated_features);
}

void print_table(const Judged& generated, const Judged& real) {
  std::cout << "user  generated: correct/count  accuracy   real val accuracy\n";
  for (const auto& [user, s] : generated.users) {
    std::cout << std::setw(4) << user << "  " << std::setw(9) << s.correct << "/" << std::left << std::setw(6)
              << s.count << std::right << std::fixed << std::setprecision(3) << std::setw(9) << s.accuracy();
    if (const auto r = real.users.find(user); r != real.users.end()) std::cout << std::setw(20) << r->second.accuracy();
    std::cout << "\n";
  }
}

void print_distances(const DistanceReport& d) {
  const DistanceFigures& o = d.overall;
  std::cout << o.summary() << "\n";
  for (const auto& why : o.skipped) tandem::log::info("evaluate: ", why);
  int64_t users_without_fid = 0;
  for (const auto& [user, f] : d.per_user) users_without_fid += !f.fid;
  if (users_without_fid > 0)
    tandem::log::info("evaluate: per-user FID left out for ", users_without_fid, " of ", d.per_user.size(),
                      " users, whose images are not more than the features; their kid_mean is the figure to read");
}

void write_report(const tandem::Config& config, const std::string& gen_dir, int64_t num_users,
                  const std::vector<ImageItem>& train, size_t real_images, const Judged& real, const Judged& generated,
                  const std::optional<DistanceReport>& d) {
  std::map<int64_t, int64_t> real_train;
  for (const auto& item : train) ++real_train[item.user_id];
  nlohmann::json report;
  report["classifier"] = tandem::trained_model(judge_settings(config).out_dir);
  report["samples_dir"] = gen_dir;
  report["chance"] = 1.0 / static_cast<double>(num_users);
  report["real_val_accuracy"] = real.accuracy;
  report["real_val_images"] = real_images;
  report["conditional_accuracy"] = generated.accuracy;
  int64_t count = 0;
  for (const auto& [user, s] : generated.users) count += s.count;
  report["generated_images"] = count;
  report["real_train_images"] = train.size();
  std::map<std::string, double> scalars = {{"conditional_accuracy", generated.accuracy},
                                           {"real_val_accuracy", real.accuracy}};
  const auto figures = [&](const DistanceFigures* f, int64_t real_count, int64_t generated_count) {
    if (f) return f->to_json();
    DistanceFigures none;
    none.real = real_count;
    none.generated = generated_count;
    none.skipped = {"fid, kid, precision, recall: eval.inception_weights names no file"};
    return none.to_json();
  };
  report.update(figures(d ? &d->overall : nullptr, static_cast<int64_t>(train.size()), count));
  if (d)
    for (const auto& [name, value] : d->overall.scalars()) scalars[name] = value;
  for (const auto& [user, s] : generated.users) {
    nlohmann::json row = {{"user", user}, {"generated", s.count}, {"correct", s.correct}, {"accuracy", s.accuracy()}};
    char tag[32];
    std::snprintf(tag, sizeof tag, "user%02lld/", static_cast<long long>(user));
    scalars[std::string(tag) + "conditional_accuracy"] = s.accuracy();
    if (const auto r = real.users.find(user); r != real.users.end()) row["real_val_accuracy"] = r->second.accuracy();
    const DistanceFigures* f = d ? &d->per_user.at(user) : nullptr;
    row["real_train_images"] = real_train[user];
    row.update(figures(f, real_train[user], s.count));
    if (f)
      for (const auto& [name, value] : f->scalars()) scalars[std::string(tag) + name] = value;
    report["per_user"].push_back(row);
  }
  const std::string path = (fs::path(eval_run_dir(config)) / "evaluate.json").string();
  tandem::write_bytes_atomically(path, report.dump(2) + "\n");
  tandem::log::info("evaluate: report in ", path);
  if (tandem::run_settings(config).tensorboard) {
    tandem::TensorBoardWriter tb((fs::path(eval_run_dir(config)) / "tb").string());
    for (const auto& [name, value] : scalars) tb.scalar("evaluate/" + name, 0, value);
  }
}

}  // namespace

int run_evaluate(tandem::World& world, const tandem::Config& config) {
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  const EvaluateKeys keys = tandem::read_keys<EvaluateKeys>(config);
  const auto [train, val] = scan_train_val(data);
  const int64_t num_users = std::max(train.num_users, val.num_users);
  const std::string gen_dir = keys.samples_dir.empty() ? samples_dir(config) : keys.samples_dir;
  const std::vector<ImageItem> generated = generated_images(gen_dir, num_users);
  // Read before the judge trains, so that a wrong file stops the run at the door.
  std::optional<FidInception> inception;
  if (!keys.inception_weights.empty())
    inception = load_fid_inception(keys.inception_weights, "eval.inception_weights");
  else if (world.is_main())
    tandem::log::info(
        "evaluate: no FID, KID, precision or recall: eval.inception_weights names no file (pytorch-fid's "
        "Inception-v3 weights as safetensors, docs/vavae.md)");
  const int64_t size = data.image_size;
  const tandem::nn::ResNetOptions model = judge_model(config, num_users, size);
  if (world.is_main())
    tandem::log::info("evaluate: a ResNet-18 learns ", num_users, " users from ", train.items.size(),
                      " real images; then it judges ", val.items.size(), " real validation and ", generated.size(),
                      " generated images (", gen_dir, ")");

  ClassifierTask task(model, size, data.hflip, train.items, val.items);
  const JudgeRun run = train_judge(world, config, task);
  if (run.status != tandem::kExitOk) return run.status;

  // Both sets are judged by the classifier validation picked.
  const tandem::InferenceSetup setup = tandem::inference_setup(world, config, /*fixed_shapes=*/true, run.model_file);
  tandem::nn::ResNet net = load_judge(run.model_file, model);
  net->to(setup.device);
  tandem::EvalContext ctx;
  ctx.world = &world;
  ctx.device = setup.device;
  ctx.precision = setup.precision;
  ctx.micro_batch = run.micro_batch;
  ctx.seed = tandem::shared_seed(world, judge_settings(config).seed);
  const Judged real = judge(task, *net, ctx, val.items);
  const Judged gen = judge(task, *net, ctx, generated);
  const std::optional<DistanceReport> d = distances(inception, config, ctx, train.items, generated, size);

  if (world.is_main()) {
    print_table(gen, real);
    std::cout << std::fixed << std::setprecision(4) << "conditional accuracy: " << gen.accuracy << " ("
              << generated.size() << " generated images classified as their user; chance " << 1.0 / num_users
              << ")\nreal validation accuracy: " << real.accuracy << " (" << val.items.size() << " images)\n";
    if (d) print_distances(*d);
    write_report(config, gen_dir, num_users, train.items, val.items.size(), real, gen, d);
  }
  world.barrier();
  return tandem::kExitOk;
}

}  // namespace vavae
