#include <torch/torch.h>

#include <filesystem>

#include "app/cam_report.h"
#include "app/carotid_task.h"
#include "app/commands.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "app/run_dir.h"
#include "app/test_report.h"
#include "data/dataset.h"
#include "metrics/calibration.h"
#include "metrics/classifier_metrics.h"
#include "metrics/temperature.h"
#include "metrics/threshold.h"
#include "tandem/config/config.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/nn/resnet.h"
#include "tandem/obs/log.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"

namespace carotid {
namespace fs = std::filesystem;
namespace log = tandem::log;
using tandem::UsageError;

namespace {

// The split a run must follow: its own (a requeued or continued run), else
// that of the run whose model it starts from, else none (a new one is drawn).
std::string split_to_reuse(const std::string& run_dir, const std::string& load) {
  const fs::path own = fs::path(run_dir) / "split.csv";
  if (fs::is_regular_file(own)) return own.string();
  if (load.empty()) return "";
  if (!fs::is_regular_file(load)) throw UsageError("model.load: " + load + ": no such file");
  const fs::path theirs = fs::path(load).parent_path().parent_path() / "split.csv";
  if (!fs::is_regular_file(theirs))
    throw UsageError("model.load: " + load + " has no split.csv in its run folder (expected " + theirs.string() +
                     "); without it, test persons could reach training");
  return theirs.string();
}

struct Parts {
  std::vector<std::string> paths;  // every image, person by person
  std::vector<Sample> train, val, test;
};

// Every image's path, person by person: what the image store decodes.
Parts samples_of(const Dataset& d) {
  Parts parts;
  for (const auto& person : d.persons())
    for (const auto& image : person.images) parts.paths.push_back(image);
  return parts;
}

// Samples of each part, leaving out images the store could not read.
void fill_samples(const Dataset& d, const ImageStore& store, Parts& parts) {
  int64_t image = 0;
  for (size_t i = 0; i < d.persons().size(); ++i) {
    const Person& person = d.persons()[i];
    auto* list = d.parts[i] == Part::train  ? &parts.train
                 : d.parts[i] == Part::val  ? &parts.val
                 : d.parts[i] == Part::test ? &parts.test
                                            : nullptr;
    for (size_t k = 0; k < person.images.size(); ++k, ++image)
      if (list && store.readable(image)) list->push_back({image, static_cast<int64_t>(i), person.label});
  }
}

// What calibrate.temperature asks of the validation images' rows (at
// temperature 1), with their NLL and image ECE before and after in the log.
double choose_temperature(const TemperatureRule& rule, const tandem::EvalRows& rows) {
  if (rule.kind == TemperatureRule::Kind::none) return 1.0;
  if (rule.kind == TemperatureRule::Kind::fixed) return rule.value;
  const double t = fit_temperature(rows.at("logit"), rows.at("label"));
  const at::Tensor label_t = rows.at("label").to(at::kLong).contiguous();
  const std::vector<int64_t> labels(label_t.data_ptr<int64_t>(), label_t.data_ptr<int64_t>() + label_t.numel());
  const auto image_ece = [&](double at) {
    return calibration_of_rows(table_rows(at_temperature(rows, at).at("prob")), labels).ece;
  };
  log::info("temperature ", t, " fitted on ", rows.at("label").size(0), " validation images: their NLL ",
            nll_at_temperature(rows.at("logit"), rows.at("label"), 1.0), " -> ",
            nll_at_temperature(rows.at("logit"), rows.at("label"), t), ", image ECE ", image_ece(1.0), " -> ",
            image_ece(t));
  return t;
}

// The best model made ready for predict from the validation persons: its
// temperature (calibrate.temperature) and then, for two classes, the
// threshold model.threshold picks on the probabilities at it (0.5 for more
// classes, where the most probable class is predicted); both written into
// its file (replaced whole). Returns the threshold.
double keep_calibration(tandem::World& world, const TemperatureRule& temperature_rule,
                        const ThresholdRule& threshold_rule, int64_t classes, CarotidTask& task,
                        torch::nn::Module& model, const tandem::EvalContext& ctx, const std::vector<Sample>& val,
                        const std::vector<std::string>& persons, tandem::Checkpoint& best) {
  task.set_temperature(1.0);
  task.set_eval(val);
  const tandem::EvalRows raw = val.empty() ? tandem::EvalRows{} : tandem::gather_eval_rows(task, model, ctx);
  const double temperature =
      val.empty() ? (temperature_rule.kind == TemperatureRule::Kind::fixed ? temperature_rule.value : 1.0)
                  : choose_temperature(temperature_rule, raw);
  task.set_temperature(temperature);
  double threshold = 0.5;
  size_t judged = 0;
  if (classes == 2 && !val.empty()) {
    const PersonScores scores = person_scores(at_temperature(raw, temperature), val, persons);
    threshold = choose_threshold(threshold_rule, scores.positive(), scores.labels);
    judged = scores.persons.size();
  }
  if (world.is_main()) {
    best.state["temperature"] = temperature;
    if (classes == 2) {
      best.state["threshold"] = threshold;
      best.state["threshold_rule"] = threshold_rule.text;
    }
    tandem::save_checkpoint(best.path, best.sets, best.state);
    if (classes == 2)
      log::info("threshold ", threshold, " (", threshold_rule.text, " on ", judged, " validation persons), kept in ",
                best.path);
    log::info("temperature ", temperature, " (calibrate.temperature = \"", temperature_rule.text, "\"), kept in ",
              best.path);
  }
  world.barrier();
  return threshold;
}

// The task's settings from train.* and data.*, checked before any work.
TaskOptions task_options_of(const tandem::Config& config, const ImageStoreOptions& store_options) {
  const AugKeys aug = tandem::read_keys<AugKeys>(config);
  const LossKeys loss = tandem::read_keys<LossKeys>(config);
  TaskOptions options;
  options.augment = augment_options(config, aug);
  options.image_size = store_options.size;
  options.threads = store_options.threads;
  options.label_smoothing = loss.label_smoothing;
  options.mixup = mixup_alpha(aug);
  return options;
}

// What the trained run is judged with.
struct TrainedRun {
  std::string run_dir;
  const Dataset& dataset;
  const Parts& parts;
  const ImageStore& store;
  const std::vector<std::string>& persons;
  uint64_t seed;
  ThresholdRule threshold_rule;
  TemperatureRule temperature_rule;
  bool tensorboard;
  bool cam;  // report.cam
};

// report.cam: the test images' Grad-CAM maps beside the test report. Like
// the report, a run continued after its end (the notebook's cell run again)
// writes them anew: RUN/cam is the run's own.
void write_test_cams(tandem::World& world, CarotidTask& task, torch::nn::Module& model, const tandem::EvalContext& ctx,
                     const tandem::EvalRows& rows, const TrainedRun& run, double threshold) {
  auto* resnet = model.as<tandem::nn::ResNetImpl>();
  if (!resnet) throw std::logic_error("report.cam: the trained model is not a ResNet");
  const std::vector<CamImage> images = cam_images(rows, run.parts.test, run.persons, threshold);
  const at::Tensor maps = class_maps(world, task, *resnet, {ctx.device, ctx.precision}, images, ctx.micro_batch);
  if (!world.is_main()) return;
  fs::remove_all(fs::path(run.run_dir) / "cam");
  write_cam_report(fs::path(run.run_dir) / "cam", images, maps, run.store, run.dataset.sheet.class_names);
}

// The model validation picked, calibrated and given its threshold on the
// validation persons, then judged once on the test persons (when there are
// any) at both.
void finish(tandem::World& world, const tandem::Config& config, tandem::Trainer& trainer, CarotidTask& task,
            const TrainedRun& run) {
  const fs::path best = tandem::trained_model(run.run_dir);
  torch::nn::Module& model = trainer.model();
  tandem::Checkpoint best_model = tandem::load_checkpoint(best.string());
  tandem::restore(best_model, "model", tandem::module_state(model));
  tandem::EvalContext ctx;
  ctx.world = &world;
  ctx.device = model.parameters().front().device();
  ctx.precision = tandem::inference_setup(world, config, /*fixed_shapes=*/true, best.string()).precision;
  ctx.micro_batch = trainer.micro_batch();
  ctx.seed = run.seed;
  const double threshold = keep_calibration(world, run.temperature_rule, run.threshold_rule, run.dataset.num_classes(),
                                            task, model, ctx, run.parts.val, run.persons, best_model);
  if (run.parts.test.empty()) {
    if (world.is_main()) log::info("no test persons (data.test_ratio = 0): no test report");
    return;
  }
  task.set_eval(run.parts.test);
  const tandem::EvalRows rows = tandem::gather_eval_rows(task, model, ctx);
  if (run.cam) write_test_cams(world, task, model, ctx, rows, run, threshold);
  if (world.is_main()) {
    ReportInputs in{rows, run.parts.test, run.persons, run.dataset.sheet.class_names, best.string()};
    in.step = best_model.get_int("step");
    in.images = run.parts.paths;
    in.threshold = threshold;
    in.temperature = kept_temperature(best.string());
    in.tensorboard = run.tensorboard;
    const auto m = write_test_report(run.run_dir, in);
    log::info("test (", best.filename().string(), ", ", run.parts.test.size(), " images): person auc ",
              m.at("person_auc"), ", accuracy ", m.at("person_accuracy"), ", balanced accuracy ",
              m.at("person_balanced_accuracy"), "; report in ", run.run_dir, "/test_report.json");
  }
  world.setup_barrier("rank 0 to write the test report");
}

void log_dataset(const Dataset& dataset, const std::string& reuse) {
  log::info("labels: ", dataset.sheet.path, ", ", dataset.persons().size(), " persons with images; ",
            dataset.match.summary());
  for (const auto& line : dataset.describe()) log::info("  ", line);
  if (!reuse.empty()) log::info("split: as in ", reuse);
}

}  // namespace

int run_train(tandem::World& world, tandem::Config config) {
  const DataKeys data = data_settings(config);
  const ImageKeys image_keys = tandem::read_keys<ImageKeys>(config);
  const ImageStoreOptions store_options = image_store_options(image_keys);
  TaskOptions task_options = task_options_of(config, store_options);
  tandem::TrainKeys settings = tandem::train_settings(config);
  const ModelKeys model_keys = tandem::read_keys<ModelKeys>(config);
  const ThresholdRule threshold_rule = parse_threshold_rule(model_keys.threshold, "model.threshold");
  const TemperatureRule temperature_rule =
      parse_temperature_rule(tandem::read_keys<CalibrateKeys>(config).temperature, "calibrate.temperature");
  const uint64_t seed = data_seed(data, tandem::shared_seed(world, settings.seed));

  const std::string run_dir = choose_run_dir(world, config);
  const std::string reuse = split_to_reuse(run_dir, model_keys.load);
  const Dataset dataset = load_dataset(data, seed, reuse);
  if (world.is_main()) log_dataset(dataset, reuse);
  task_options.model = model_options(model_keys, image_keys, dataset.num_classes());
  config.set("model.classes", dataset.sheet.class_names, dataset.sheet.path);
  config.set("model.stem", task_options.model.resnet.stem, "data.image_size");
  config.set("train.out_dir", run_dir, "the run folder");
  settings.out_dir = run_dir;
  build_classifier(task_options.model, true);

  Parts parts = samples_of(dataset);
  const ImageStore store(world, parts.paths, store_options);
  fill_samples(dataset, store, parts);
  if (temperature_rule.kind == TemperatureRule::Kind::fit && parts.val.empty())
    throw UsageError(
        "calibrate.temperature = \"fit\" fits on the validation images, and none of this run's can be read: "
        "set it to \"none\" or a number");
  if (tandem::read_keys<LossKeys>(config).class_weights == "balanced")
    task_options.class_weights = balanced_class_weights(parts.train, dataset.num_classes());

  std::vector<std::string> persons;
  for (const auto& p : dataset.persons()) persons.push_back(p.id);
  CarotidTask task(task_options, store, persons, parts.train, parts.val);
  // The Trainer checks its settings (train.best_metric among them) before
  // the run folder exists, so a refused run leaves none behind.
  const bool cam = tandem::read_keys<CamReportKeys>(config).cam;
  tandem::Trainer trainer(world, config, task, settings);
  if (world.is_main()) {
    create_run_dir(config, run_dir);
    if (reuse != (fs::path(run_dir) / "split.csv").string())
      write_split_csv((fs::path(run_dir) / "split.csv").string(), dataset.persons(), dataset.parts);
    log::info("run folder: ", run_dir, " (to continue it after a preemption: --run-dir ", run_dir, ")");
  }
  const int status = trainer.run();
  if (status != tandem::kExitOk) return status;
  finish(world, config, trainer, task,
         {run_dir, dataset, parts, store, persons, seed, threshold_rule, temperature_rule, settings.tensorboard, cam});
  return status;
}

}  // namespace carotid
