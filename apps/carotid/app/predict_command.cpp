#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "app/cam_report.h"
#include "app/carotid_task.h"
#include "app/commands.h"
#include "app/cv_report.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "app/test_report.h"
#include "data/dataset.h"
#include "data/person_folders.h"
#include "keys.h"
#include "labels/label_sheet.h"
#include "metrics/classifier_metrics.h"
#include "metrics/ensemble.h"
#include "metrics/threshold.h"
#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/data/csv.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"

namespace carotid {
namespace fs = std::filesystem;
namespace log = tandem::log;
using tandem::UsageError;

namespace {

// The settings the model was trained with, from the config its file carries.
tandem::Config model_config(const std::string& path) {
  const tandem::Config config = tandem::config_from_checkpoint(carotid_schema(), path);
  if (tandem::read_fields<ModelKeys>(config).classes.size() < 2)
    throw UsageError(path + ": not a model written by `carotid train` (its config names no classes)");
  return config;
}

// A folder of person folders (and loose images, each its own person), or
// one image.
std::vector<PersonFolder> input_persons(const std::string& input) {
  if (input.empty()) throw UsageError("cmd.input is not set: give images to classify (--input DIR_OR_FILE)");
  if (fs::is_regular_file(input)) {
    if (!is_image_file(input)) throw UsageError("cmd.input: " + input + " is not a .png, .jpg, .jpeg or .bmp");
    return {{fs::path(input).stem().string(), fs::path(input).parent_path().string(), {input}}};
  }
  std::vector<PersonFolder> persons = scan_person_folders(input, "cmd.input");
  std::vector<std::string> loose;
  for (const auto& entry : fs::directory_iterator(input))
    if (entry.is_regular_file() && is_image_file(entry.path().string())) loose.push_back(entry.path().string());
  std::sort(loose.begin(), loose.end());
  for (const auto& file : loose) persons.push_back({fs::path(file).stem().string(), input, {file}});
  persons.erase(std::remove_if(persons.begin(), persons.end(), [](const PersonFolder& p) { return p.images.empty(); }),
                persons.end());
  if (persons.empty()) throw UsageError("cmd.input: no images under " + input);
  return persons;
}

// The model files to predict with: the file given, or for a cross-validation
// folder the best model of each of its folds, or of each model of each fold
// (an ensemble: every person of the data was tested by some of them).
std::vector<std::string> model_files(const std::string& given) {
  if (given.empty()) throw UsageError("cmd.model is not set: give a model file (--model RUN/models/best_model.h5)");
  if (!fs::is_directory(given)) {
    if (!fs::is_regular_file(given)) throw UsageError("cmd.model: " + given + ": no such file");
    return {given};
  }
  if (!fs::is_regular_file(fs::path(given) / "folds.csv"))
    throw UsageError("cmd.model: " + given + " is a folder but not a cross-validation (no folds.csv)");
  std::vector<std::string> files;
  for (int64_t k = 0; fs::is_directory(fold_dir(given, k)); ++k)
    for (const auto& run : fold_runs(given, k)) {
      const std::string model = tandem::trained_model(run);
      if (model.empty())
        throw UsageError("cmd.model: fold " + std::to_string(k) + " has no model file in " + run +
                         "/models (best_model.h5 or final_model.h5): is its training done?");
      files.push_back(model);
    }
  if (files.empty()) throw UsageError("cmd.model: " + given + " holds no fold-0/");
  return files;
}

// Every model must take the channels the first does and name the same
// classes; each sees the images at its own size.
void check_alike(const tandem::Config& first, const std::string& first_path, const tandem::Config& other,
                 const std::string& other_path) {
  const int64_t channels = tandem::read_fields<ImageKeys>(first).store.channels;
  const int64_t other_channels = tandem::read_fields<ImageKeys>(other).store.channels;
  if (channels != other_channels)
    throw UsageError("cmd.model: " + other_path + " has data.channels " + std::to_string(other_channels) + ", " +
                     first_path + " " + std::to_string(channels) + ": an ensemble needs one kind of image");
  if (tandem::read_fields<ModelKeys>(first).classes != tandem::read_fields<ModelKeys>(other).classes)
    throw UsageError("cmd.model: " + other_path + " names other classes than " + first_path);
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", v);
  return text;
}

// Each input person's label index from the sheet at cmd.labels, matched as in
// training; -1 for a person the sheet does not label (predicted all the
// same, left out of the scores), and for all without a sheet.
std::vector<int64_t> person_labels(tandem::World& world, const tandem::Config& config,
                                   const std::vector<PersonFolder>& folders, const std::vector<std::string>& classes) {
  std::vector<int64_t> person_label(folders.size(), -1);
  const CommandKeys cmd = tandem::read_keys<CommandKeys>(config);
  const std::string& labels_path = cmd.labels;
  if (labels_path.empty()) return person_label;
  const LabelSheet sheet = read_label_sheet(labels_path, tandem::read_fields<DataKeys>(config).sheet);
  if (sheet.class_names != classes && sheet.num_classes() > static_cast<int64_t>(classes.size()))
    throw UsageError(labels_path + ": classes " + tandem::first_few(sheet.class_names) + " do not fit the model's " +
                     tandem::first_few(classes));
  const PersonMatch match = match_persons(sheet, folders, cmd.input);
  std::map<std::string, int64_t> label_of;
  for (const auto& p : match.persons) label_of[p.images.front()] = p.label;
  for (size_t i = 0; i < folders.size(); ++i) {
    const auto it = label_of.find(folders[i].images.front());
    if (it != label_of.end()) person_label[i] = it->second;
  }
  if (world.is_main()) log::info("labels: ", labels_path, ": ", match.summary());
  return person_label;
}

// Every image of every input person, the person's label or 0 where it has none.
struct Inputs {
  std::vector<std::string> paths, persons;
  std::vector<Sample> samples;
};

Inputs inputs_of(const std::vector<PersonFolder>& folders, const std::vector<int64_t>& person_label) {
  Inputs in;
  for (size_t i = 0; i < folders.size(); ++i) {
    in.persons.push_back(folders[i].id);
    for (const auto& image : folders[i].images) {
      in.samples.push_back(
          {static_cast<int64_t>(in.paths.size()), static_cast<int64_t>(i), std::max<int64_t>(0, person_label[i])});
      in.paths.push_back(image);
    }
  }
  return in;
}

// The rows (ids, probabilities, predicted class) of images.csv and persons.csv.
void write_predictions(const fs::path& out, const std::vector<std::string>& classes, const tandem::EvalRows& rows,
                       const Inputs& in, double threshold) {
  const auto probs = table_rows(rows.at("prob"));
  const auto order = rows.at("sample").to(at::kLong).contiguous();
  std::vector<std::string> header = {"image", "person"};
  for (const auto& name : classes) header.push_back("p_" + name);
  header.push_back("predicted");
  std::vector<std::vector<std::string>> image_rows, person_rows;
  for (size_t k = 0; k < probs.size(); ++k) {
    const Sample& s = in.samples.at(order.data_ptr<int64_t>()[k]);
    std::vector<std::string> row = {in.paths[s.image], in.persons[s.person]};
    for (double p : probs[k]) row.push_back(number(p));
    row.push_back(classes[decided_class(probs[k], threshold)]);
    image_rows.push_back(row);
  }
  const auto scores = person_scores(rows, in.samples, in.persons);
  for (size_t i = 0; i < scores.persons.size(); ++i) {
    std::vector<std::string> row = {scores.persons[i], std::to_string(scores.image_counts[i])};
    for (double p : scores.probs[i]) row.push_back(number(p));
    row.push_back(classes[decided_class(scores.probs[i], threshold)]);
    person_rows.push_back(row);
  }
  fs::create_directories(out);
  tandem::write_csv((out / "images.csv").string(), header, image_rows);
  header[1] = "images";
  header[0] = "person";
  tandem::write_csv((out / "persons.csv").string(), header, person_rows);
  log::info("predictions: ", image_rows.size(), " images, ", person_rows.size(), " persons in ",
            (out / "images.csv").string(), " and ", (out / "persons.csv").string());
}

// metrics.json: the classifier's scores over the images of labelled persons.
void write_scores(const fs::path& out, const std::string& labels_path, const tandem::EvalRows& rows, const Inputs& in,
                  const std::vector<int64_t>& person_label, double threshold) {
  const auto order = rows.at("sample").to(at::kLong).contiguous();
  std::vector<int64_t> keep;
  for (int64_t k = 0; k < order.numel(); ++k)
    if (person_label[in.samples.at(order.data_ptr<int64_t>()[k]).person] >= 0) keep.push_back(k);
  if (keep.empty()) throw UsageError(labels_path + ": labels none of the persons predicted");
  const auto index = torch::tensor(keep, torch::kLong);
  tandem::EvalRows labelled;
  for (const auto& key : {"prob", "label", "sample", "loss"}) labelled[key] = rows.at(key).index_select(0, index);
  const auto metrics = classification_metrics(labelled, in.samples, in.persons);
  nlohmann::json j;
  for (const auto& [k, v] : metrics) j[k] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  if (rows.at("prob").size(1) == 2) {
    // The figures above decide at 0.5; these at the model's threshold.
    const PersonScores scores = person_scores(labelled, in.samples, in.persons);
    const BinaryMetrics m = binary_metrics(scores.positive(), scores.labels, threshold);
    j["threshold"] = threshold;
    j["person_at_threshold"] = decided_json(m);
  }
  tandem::write_bytes_atomically((out / "metrics.json").string(), j.dump(2) + "\n");
  std::string line;
  for (const auto& [k, v] : metrics) line += " " + k + " " + number(v);
  log::info("scored against ", labels_path, " (", keep.size(), " images):", line);
}

// The images decoded once at each size the models take (an ensemble may mix
// them, as cv.image_sizes trains it); samples of an image some store cannot
// read are left out.
std::map<int64_t, ImageStore> image_stores(tandem::World& world, const tandem::Config& config,
                                           const std::vector<tandem::Config>& configs, Inputs& in) {
  std::map<int64_t, ImageStore> stores;
  const ImageStoreOptions here = image_store_options(tandem::read_keys<ImageKeys>(config));
  for (const auto& mc : configs) {
    ImageStoreOptions store_options = image_store_options(tandem::read_fields<ImageKeys>(mc));
    store_options.strict = here.strict;
    store_options.threads = here.threads;
    store_options.persist = false;
    stores.try_emplace(store_options.size, world, in.paths, store_options);
  }
  const auto unreadable = [&](const Sample& s) {
    return std::any_of(stores.begin(), stores.end(), [&](const auto& kv) { return !kv.second.readable(s.image); });
  };
  in.samples.erase(std::remove_if(in.samples.begin(), in.samples.end(), unreadable), in.samples.end());
  if (in.samples.empty())
    throw UsageError("cmd.input: none of the " + std::to_string(in.paths.size()) + " images can be read");
  return stores;
}

// One model of the prediction: how its task sees the images, and where and in
// what precision it runs (the one it was trained in).
struct PredictModel {
  TaskOptions options;
  tandem::InferenceSetup setup;
};

PredictModel predict_model(tandem::World& world, const tandem::Config& config, const tandem::Config& model_config,
                           const std::string& file, int64_t classes) {
  PredictModel m;
  m.setup = tandem::inference_setup(world, config, /*fixed_shapes=*/true, file);
  m.options.model = model_options(tandem::read_fields<ModelKeys>(model_config),
                                  tandem::read_fields<ImageKeys>(model_config), classes);
  m.options.model.init_from.clear();
  m.options.model.load = file;
  m.options.image_size = tandem::read_fields<ImageKeys>(model_config).store.size;
  m.options.eval_hflip = tandem::read_keys<CommandKeys>(config).tta;
  m.options.temperature = kept_temperature(file);
  return m;
}

// Every model's evaluation rows over the inputs, averaged (one model: its own).
tandem::EvalRows predicted_rows(tandem::World& world, const tandem::Config& config,
                                const std::vector<std::string>& files, const std::vector<tandem::Config>& configs,
                                int64_t classes, const std::map<int64_t, ImageStore>& stores, const Inputs& in) {
  tandem::EvalContext ctx;
  ctx.world = &world;
  ctx.micro_batch = tandem::train_settings(config).micro_batch.value;
  std::vector<tandem::EvalRows> each;
  for (size_t m = 0; m < files.size(); ++m) {
    const PredictModel pm = predict_model(world, config, configs[m], files[m], classes);
    ctx.device = pm.setup.device;
    ctx.precision = pm.setup.precision;
    CarotidTask task(pm.options, stores.at(pm.options.image_size), in.persons, {}, in.samples);
    auto model = build_classifier(pm.options.model);
    model->to(pm.setup.device);
    each.push_back(tandem::gather_eval_rows(task, *model, ctx));
  }
  return mean_of_models(each);
}

// Grad-CAM of every image's predicted class, averaged over the models at the
// largest image size among them; rank 0 writes them under `dir`.
void write_cams(tandem::World& world, const tandem::Config& config, const std::vector<std::string>& files,
                const std::vector<tandem::Config>& configs, const std::vector<std::string>& classes,
                const std::map<int64_t, ImageStore>& stores, const Inputs& in, const std::vector<CamImage>& images,
                const fs::path& dir) {
  const int64_t size = stores.rbegin()->first;
  at::Tensor sum;
  for (size_t m = 0; m < files.size(); ++m) {
    const PredictModel pm = predict_model(world, config, configs[m], files[m], static_cast<int64_t>(classes.size()));
    CarotidTask task(pm.options, stores.at(pm.options.image_size), in.persons, {}, in.samples);
    auto model = build_classifier(pm.options.model, /*quiet=*/true);
    model->to(pm.setup.device);
    const at::Tensor maps = maps_at(
        class_maps(world, task, *model, pm.setup, images, tandem::train_settings(config).micro_batch.value), size);
    sum = sum.defined() ? sum + maps : maps;
  }
  if (!world.is_main()) return;
  write_cam_report(dir, images, sum / static_cast<double>(files.size()), stores.at(size), classes,
                   static_cast<int64_t>(files.size()));
}

// Where predictions go: cmd.out, else CV/predictions for a cv folder, else
// the model's run folder's predictions/.
fs::path output_dir(const tandem::Config& config, const std::string& model_path) {
  const std::string out = tandem::read_keys<CommandKeys>(config).out;
  if (!out.empty()) return out;
  if (fs::is_directory(model_path)) return fs::path(model_path) / "predictions";
  return fs::path(model_path).parent_path().parent_path() / "predictions";
}

// A cv folder's report holds a threshold chosen on every fold's out-of-fold
// persons; until it is written, the mean of the models' own.
double decision_threshold(tandem::World& world, const std::string& model_path, const std::vector<std::string>& files,
                          const std::vector<std::string>& classes) {
  const std::optional<double> cv_threshold =
      fs::is_directory(model_path) ? ensemble_threshold(model_path) : std::nullopt;
  const double threshold = cv_threshold ? *cv_threshold : kept_threshold(files);
  if (classes.size() == 2 && world.is_main())
    log::info("decision threshold on P(", classes.back(), "): ", threshold,
              cv_threshold       ? " (cv_report.json: chosen on the folds' out-of-fold persons)"
              : files.size() > 1 ? " (the mean of the models' own)"
                                 : "");
  return threshold;
}

}  // namespace

int run_predict(tandem::World& world, const tandem::Config& config) {
  const CommandKeys cmd = tandem::read_keys<CommandKeys>(config);
  const std::string& model_path = cmd.model;
  const std::vector<std::string> files = model_files(model_path);
  std::vector<tandem::Config> configs;
  for (const auto& file : files) configs.push_back(model_config(file));
  for (size_t m = 1; m < files.size(); ++m) check_alike(configs.front(), files.front(), configs[m], files[m]);
  const auto classes = tandem::read_fields<ModelKeys>(configs.front()).classes;
  const auto folders = input_persons(cmd.input);
  const fs::path out = output_dir(config, model_path);
  if (cmd.cam) check_cam_folder(out / "cam");
  const std::vector<int64_t> person_label = person_labels(world, config, folders, classes);
  Inputs in = inputs_of(folders, person_label);
  const std::map<int64_t, ImageStore> stores = image_stores(world, config, configs, in);
  const tandem::EvalRows rows =
      predicted_rows(world, config, files, configs, static_cast<int64_t>(classes.size()), stores, in);
  if (files.size() > 1 && world.is_main())
    log::info("ensemble of ", files.size(), " models (", model_path, "): their probabilities averaged");
  const double threshold = decision_threshold(world, model_path, files, classes);
  if (cmd.cam)
    write_cams(world, config, files, configs, classes, stores, in, cam_images(rows, in.samples, in.persons, threshold),
               out / "cam");
  if (!world.is_main()) return tandem::kExitOk;
  write_predictions(out, classes, rows, in, threshold);
  if (!cmd.labels.empty()) write_scores(out, cmd.labels, rows, in, person_label, threshold);
  return tandem::kExitOk;
}

}  // namespace carotid
