#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "app/classifier_task.h"
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

}  // namespace

int run_evaluate(tandem::World& world, const tandem::Config& config) {
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  const EvaluateKeys keys = tandem::read_keys<EvaluateKeys>(config);
  const auto [train, val] = scan_train_val(data);
  const int64_t num_users = std::max(train.num_users, val.num_users);
  const std::string gen_dir = keys.samples_dir.empty() ? samples_dir(config) : keys.samples_dir;
  const std::vector<ImageItem> generated = generated_images(gen_dir, num_users);
  const int64_t size = data.image_size;
  tandem::nn::ResNetOptions model;
  model.depth = 18;
  model.num_classes = num_users;
  model.stem = keys.stem != "auto" ? keys.stem : size < 96 ? "small" : "imagenet";
  const tandem::TrainKeys stage = judge_settings(config);
  const std::string& run_dir = stage.out_dir;
  if (world.is_main())
    tandem::log::info("evaluate: a ResNet-18 learns ", num_users, " users from ", train.items.size(),
                      " real images; then it judges ", val.items.size(), " real validation and ", generated.size(),
                      " generated images (", gen_dir, ")");

  ClassifierTask task(model, size, data.hflip, train.items, val.items);
  tandem::Trainer trainer(world, config, task, stage);
  const int status = trainer.run();
  if (status != tandem::kExitOk) return status;

  // Both sets are judged by the classifier validation picked.
  torch::nn::Module& net = trainer.model();
  const std::string judge = tandem::trained_model(run_dir);
  tandem::restore(tandem::load_checkpoint(judge), "model", tandem::module_state(net));
  tandem::EvalContext ctx;
  ctx.world = &world;
  ctx.device = net.parameters().front().device();
  ctx.precision = tandem::inference_setup(world, config, /*fixed_shapes=*/true, judge).precision;
  ctx.micro_batch = trainer.micro_batch();
  ctx.seed = tandem::shared_seed(world, stage.seed);
  const tandem::EvalRows real_rows = tandem::gather_eval_rows(task, net, ctx);
  const double real = tandem::classification_accuracy(real_rows);
  const auto real_users = per_user(real_rows);
  task.set_eval(generated);
  const tandem::EvalRows gen_rows = tandem::gather_eval_rows(task, net, ctx);
  const double conditional = tandem::classification_accuracy(gen_rows);
  const auto gen_users = per_user(gen_rows);

  if (world.is_main()) {
    nlohmann::json report;
    report["classifier"] = tandem::trained_model(run_dir);
    report["samples_dir"] = gen_dir;
    report["chance"] = 1.0 / static_cast<double>(num_users);
    report["real_val_accuracy"] = real;
    report["real_val_images"] = val.items.size();
    report["conditional_accuracy"] = conditional;
    report["generated_images"] = generated.size();
    std::cout << "user  generated: correct/count  accuracy   real val accuracy\n";
    for (const auto& [user, s] : gen_users) {
      const double acc = static_cast<double>(s.correct) / static_cast<double>(s.count);
      nlohmann::json row = {{"user", user}, {"generated", s.count}, {"correct", s.correct}, {"accuracy", acc}};
      std::cout << std::setw(4) << user << "  " << std::setw(9) << s.correct << "/" << std::left << std::setw(6)
                << s.count << std::right << std::fixed << std::setprecision(3) << std::setw(9) << acc;
      const auto r = real_users.find(user);
      if (r != real_users.end()) {
        const double real_acc = static_cast<double>(r->second.correct) / static_cast<double>(r->second.count);
        row["real_val_accuracy"] = real_acc;
        std::cout << std::setw(20) << real_acc;
      }
      std::cout << "\n";
      report["per_user"].push_back(row);
    }
    std::cout << std::fixed << std::setprecision(4) << "conditional accuracy: " << conditional << " ("
              << generated.size() << " generated images classified as their user; chance " << 1.0 / num_users
              << ")\nreal validation accuracy: " << real << " (" << val.items.size() << " images)\n";
    const std::string path = (fs::path(eval_run_dir(config)) / "evaluate.json").string();
    tandem::write_bytes_atomically(path, report.dump(2) + "\n");
    tandem::log::info("evaluate: report in ", path);
  }
  world.barrier();
  return tandem::kExitOk;
}

}  // namespace vavae
