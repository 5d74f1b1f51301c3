#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/cv_keys.h"
#include "app/cv_report.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "app/run_dir.h"
#include "data/dataset.h"
#include "data/folds.h"
#include "keys.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "tandem/data/csv.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/train/train_keys.h"

namespace carotid {
namespace fs = std::filesystem;
namespace log = tandem::log;
using tandem::UsageError;

namespace {

// folds.csv (person,label,fold), written by the first start; a later start,
// or another fold's job, must find the same persons in the same folds, else
// the folds' test sets would overlap or miss persons.
void keep_folds(const std::string& path, const std::vector<Person>& persons, const std::vector<int64_t>& folds) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < persons.size(); ++i)
    rows.push_back({persons[i].id, std::to_string(persons[i].label), std::to_string(folds[i])});
  if (!fs::exists(path)) {
    tandem::write_csv(path, {"person", "label", "fold"}, rows);
    return;
  }
  const tandem::CsvTable kept = tandem::read_csv(path);
  std::vector<std::vector<std::string>> before;
  for (const auto& row : kept.rows)
    before.push_back({row[kept.column("person")], row[kept.column("label")], row[kept.column("fold")]});
  if (before != rows)
    throw UsageError(path +
                     ": the persons, labels or seed differ from those this cross-validation started with; "
                     "give a new --run-dir, or the data and seed it used");
}

// A folder continued with another cv.models_per_fold would mix folds of one
// model with folds of several, or average a fold's models with stale ones.
void check_models_per_fold(const std::string& cv_dir, int64_t fold, int64_t per_fold) {
  const bool one = fs::exists(fs::path(fold_dir(cv_dir, fold)) / "models");
  int64_t several = 0;
  while (fs::exists(fold_model_dir(cv_dir, fold, several))) ++several;
  // A fold done with fewer models would be reported as done, with fewer.
  const bool fewer = fold_done(cv_dir, fold) && several < per_fold;
  if ((per_fold == 1 && several > 0) || (per_fold > 1 && (one || several > per_fold || fewer)))
    throw UsageError(fold_dir(cv_dir, fold) + " holds " +
                     (one ? std::string("one model in models/") : std::to_string(several) + " model-m/ folders") +
                     ", not cv.models_per_fold = " + std::to_string(per_fold) +
                     ": continue it with the value it started with, or give a new --run-dir");
}

// A continued cv keeps the models it finished and resumes those it began, so
// each must have begun with the train.seed and data.image_size this start
// gives it; else a fold would average two recipes' models unnoticed. The
// config.toml a run writes when it starts says how it began.
// The settings in a config.toml a start wrote, none if there is none. Read
// as text and merged, since merge_file refuses keys retired since, and a
// folder written by an older build must still be read.
std::optional<tandem::Config> began_with(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  tandem::Config began(carotid_schema());
  tandem::merge_text(began, text.str(), path.string());
  return began;
}

void check_model_began_alike(const std::string& dir, int64_t seed, int64_t size) {
  const fs::path path = fs::path(dir) / "config.toml";
  const auto began_opt = began_with(path);
  if (!began_opt) return;
  const tandem::Config& began = *began_opt;
  const int64_t their_seed = tandem::run_fields(began).seed;
  const int64_t their_size = tandem::read_fields<ImageKeys>(began).store.size;
  if (their_seed != seed || their_size != size)
    throw UsageError(path.string() + ": this model began with train.seed " + std::to_string(their_seed) + " at " +
                     std::to_string(their_size) + " pixels, this cv gives it train.seed " + std::to_string(seed) +
                     " at " + std::to_string(size) +
                     " pixels: continue with the seed and cv.image_sizes (or data.image_size) it started with, "
                     "or give a new --run-dir");
}

// train.seed = -1 draws a seed when a cross-validation starts; a continued
// one takes it from the config.toml the first start wrote, or its folds and
// models would be refused as another seed's.
uint64_t cv_seed(tandem::World& world, const tandem::Config& config, const std::string& cv_dir) {
  const int64_t configured = tandem::run_settings(config).seed;
  if (configured < 0)
    if (const auto began = began_with(fs::path(cv_dir) / "config.toml"))
      return static_cast<uint64_t>(tandem::run_fields(*began).seed);
  return tandem::shared_seed(world, configured);
}

// The folds of a cross-validation folder, from its folds.csv.
int64_t folds_of(const std::string& cv_dir) {
  const std::string path = (fs::path(cv_dir) / "folds.csv").string();
  if (!fs::is_regular_file(path))
    throw UsageError(cv_dir + " is not a cross-validation folder (no folds.csv): give the folder `cv` made");
  const tandem::CsvTable table = tandem::read_csv(path);
  int64_t k = 0;
  for (const auto& row : table.rows) k = std::max<int64_t>(k, std::stoll(row[table.column("fold")]) + 1);
  return k;
}

// Model m's data.image_size, the (m mod n)-th of cv.image_sizes; none when
// it is empty (data.image_size for all).
std::vector<int64_t> model_image_sizes(const CvKeys& keys) {
  const std::vector<int64_t>& given = keys.image_sizes;
  if (given.empty()) return {};
  if (static_cast<int64_t>(given.size()) > keys.models_per_fold)
    throw UsageError("cv.image_sizes gives " + std::to_string(given.size()) + " sizes for cv.models_per_fold = " +
                     std::to_string(keys.models_per_fold) + " models: each size needs a model of its own");
  std::vector<int64_t> sizes;
  for (int64_t m = 0; m < keys.models_per_fold; ++m) sizes.push_back(given[m % given.size()]);
  return sizes;
}

ThresholdRule threshold_rule(const tandem::Config& config) {
  return parse_threshold_rule(tandem::read_keys<ModelKeys>(config).threshold, "model.threshold");
}

// Every rank checks that the folds are done, so that all stop alike; rank 0 writes.
int report(tandem::World& world, const std::string& cv_dir, bool tensorboard, const ThresholdRule& rule) {
  const int64_t k = folds_of(cv_dir);
  require_folds_done(cv_dir, k);
  if (world.is_main()) {
    const std::string table = write_cv_report(cv_dir, k, tensorboard, rule);
    log::info("cross-validation report: ", cv_dir, "/cv_report.json, cv_report.txt, and the pooled out-of-fold ",
              "test_report.json, confusion_matrix.png, roc_curve.png, reliability.png, reliability_person.png\n", table);
  }
  world.setup_barrier("rank 0 to write the cross-validation report");
  return tandem::kExitOk;
}

// What a cv start trains: its folds, the models of each, and where.
struct CvPlan {
  int64_t folds = 0;
  int64_t only = -1;  // cv.fold: the one fold this job trains, -1 for all
  int64_t per_fold = 1;
  std::vector<int64_t> sizes;  // model m's data.image_size; empty: data.image_size for all
  int64_t image_size = 0;      // data.image_size
  std::string cv_dir;
  uint64_t train_seed = 0;
  uint64_t seed = 0;             // the data's: the folds, splits and images drawn
  std::vector<int64_t> fold_of;  // per person of `dataset`
  double val_share = 0;
  bool tensorboard = false;

  std::string model_dir(int64_t fold, int64_t m) const {
    return per_fold == 1 ? fold_dir(cv_dir, fold) : fold_model_dir(cv_dir, fold, m);
  }
  // Model m differs from model 0 only in its initial weights, batch order and
  // augmentation (train.seed + m), and in its image size when cv.image_sizes
  // gives one.
  int64_t model_seed(int64_t m) const {
    return static_cast<int64_t>((train_seed + static_cast<uint64_t>(m)) & INT64_MAX);
  }
  int64_t model_size(int64_t m) const { return sizes.empty() ? image_size : sizes[m]; }
};

// The cv.* settings checked, before the first model trains for minutes.
CvPlan checked_plan(const tandem::Config& config) {
  const CvKeys keys = tandem::read_keys<CvKeys>(config);
  CvPlan plan;
  plan.folds = keys.folds;
  plan.only = keys.fold;
  if (plan.only >= plan.folds)
    throw UsageError("cv.fold must be -1 (every fold) or in [0, " + std::to_string(plan.folds) + "), got " +
                     std::to_string(plan.only));
  if (plan.only >= 0 && tandem::read_keys<CommandKeys>(config).run_dir.empty())
    throw UsageError("cv.fold = " + std::to_string(plan.only) +
                     " needs the cross-validation folder every fold's job shares: give --run-dir CV");
  plan.per_fold = keys.models_per_fold;
  plan.sizes = model_image_sizes(keys);
  plan.image_size = tandem::read_keys<ImageKeys>(config).store.size;
  return plan;
}

// The folder's config.toml and folds.csv, written by the first start and
// checked by every later one.
void keep_cv_dir(const tandem::Config& config, const CvPlan& plan, const Dataset& dataset) {
  create_run_dir(config, plan.cv_dir);
  const fs::path config_file = fs::path(plan.cv_dir) / "config.toml";
  if (!fs::exists(config_file)) {
    tandem::Config began = config;
    if (tandem::run_settings(config).seed < 0) began.set("train.seed", static_cast<int64_t>(plan.train_seed), "drawn");
    began.write(config_file.string());
  }
  keep_folds((fs::path(plan.cv_dir) / "folds.csv").string(), dataset.persons(), plan.fold_of);
  log::info("cross-validation: ", plan.folds, " person-level folds of ", dataset.persons().size(), " persons in ",
            plan.cv_dir, " (to continue it: --run-dir ", plan.cv_dir, ")");
}

// Trains model m of a fold in its folder, on the fold's split.
int train_fold_model(tandem::World& world, const tandem::Config& config, const CvPlan& plan, const Dataset& dataset,
                     int64_t fold, int64_t m) {
  const std::string dir = plan.model_dir(fold, m);
  const std::string name = "fold " + std::to_string(fold) + (plan.per_fold == 1 ? "" : " model " + std::to_string(m));
  if (run_done(dir)) {
    if (world.is_main()) log::info(name, ": done before, in ", dir);
    return tandem::kExitOk;
  }
  // The fold's split goes where a train run looks for its own, so the run,
  // and a requeued one, trains and tests on exactly these persons.
  if (world.is_main() && !fs::exists(fs::path(dir) / "split.csv")) {
    fs::create_directories(dir);
    write_split_csv((fs::path(dir) / "split.csv").string(), dataset.persons(),
                    fold_parts(dataset.persons(), plan.fold_of, fold, plan.val_share, plan.seed));
  }
  world.barrier();
  tandem::Config run_config = config;
  run_config.set("cmd.run_dir", dir, "cv " + name);
  run_config.set("train.seed", plan.model_seed(m), "cv " + name);
  if (!plan.sizes.empty()) run_config.set("data.image_size", plan.sizes[m], "cv.image_sizes");
  if (world.is_main())
    log::info("fold ", fold, " of ", plan.folds,
              plan.per_fold == 1 ? "" : ", model " + std::to_string(m) + " of " + std::to_string(plan.per_fold),
              ": training in ", dir, " (train.seed ", plan.model_seed(m), ", ", plan.model_size(m), " pixels)");
  // data.seed pins the images each model sees, which
  // data.max_imgs_per_person would otherwise redraw.
  run_config.set("data.seed", static_cast<int64_t>(plan.seed & INT64_MAX), "cv");
  return run_train(world, run_config);
}

// Trains a fold's models not done yet; with several, judges their mean.
int train_fold(tandem::World& world, const tandem::Config& config, const CvPlan& plan, const Dataset& dataset,
               int64_t fold) {
  if (fold_done(plan.cv_dir, fold)) {
    if (world.is_main()) log::info("fold ", fold, ": done before, in ", fold_dir(plan.cv_dir, fold));
    return tandem::kExitOk;
  }
  for (int64_t m = 0; m < plan.per_fold; ++m) {
    const int status = train_fold_model(world, config, plan, dataset, fold, m);
    if (status != tandem::kExitOk) return status;
  }
  if (plan.per_fold > 1 && world.is_main()) {
    write_fold_ensemble(plan.cv_dir, fold, plan.tensorboard);
    log::info("fold ", fold, ": the mean of its ", plan.per_fold, " models judged in ", fold_dir(plan.cv_dir, fold),
              "/test_report.json");
  }
  world.setup_barrier("rank 0 to judge the fold's ensemble");
  return tandem::kExitOk;
}

}  // namespace

int run_cv(tandem::World& world, const tandem::Config& config) {
  CvPlan plan = checked_plan(config);
  const DataKeys data = data_settings(config);
  plan.tensorboard = tandem::train_settings(config).tensorboard;
  plan.cv_dir = choose_run_dir(world, config, "cv");
  plan.train_seed = cv_seed(world, config, plan.cv_dir);
  plan.seed = data_seed(data, plan.train_seed);
  const Dataset dataset = read_dataset(data, plan.seed);
  plan.fold_of = assign_folds(dataset.persons(), plan.folds, plan.seed);
  // The validation share of the persons a fold trains on, as a single run's
  // split has it: data.val_ratio of train + val.
  plan.val_share = data.ratios.val / (data.ratios.train + data.ratios.val);
  if (world.is_main()) keep_cv_dir(config, plan, dataset);
  world.barrier();
  for (int64_t fold = 0; fold < plan.folds; ++fold) {
    check_models_per_fold(plan.cv_dir, fold, plan.per_fold);
    for (int64_t m = 0; m < plan.per_fold; ++m)
      check_model_began_alike(plan.model_dir(fold, m), plan.model_seed(m), plan.model_size(m));
  }
  for (int64_t fold = 0; fold < plan.folds; ++fold) {
    if (plan.only >= 0 && fold != plan.only) continue;
    const int status = train_fold(world, config, plan, dataset, fold);
    if (status != tandem::kExitOk) return status;
  }
  const std::vector<int64_t> left = missing_folds(plan.cv_dir, plan.folds);
  if (!left.empty()) {
    if (world.is_main())
      log::info("folds ", fold_list(left), " still to run; when they are done: apps/carotid cv-report --run-dir ",
                plan.cv_dir);
    return tandem::kExitOk;
  }
  return report(world, plan.cv_dir, plan.tensorboard, threshold_rule(config));
}

int run_cv_report(tandem::World& world, const tandem::Config& config) {
  const std::string dir = tandem::read_keys<CommandKeys>(config).run_dir;
  if (dir.empty()) throw UsageError("cv-report needs the cross-validation folder: --run-dir CV");
  return report(world, dir, tandem::train_settings(config).tensorboard, threshold_rule(config));
}

}  // namespace carotid
