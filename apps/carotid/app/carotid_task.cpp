#include "app/carotid_task.h"

#include <torch/torch.h>

#include "images/for_each_index.h"
#include "metrics/classifier_metrics.h"
#include "metrics/temperature.h"
#include "tandem/random.h"
#include "tandem/train/classification.h"

namespace carotid {

namespace {

// ImageNet's channel statistics, which torchvision weights expect; a gray
// image gets their mean, as a gray copy of ImageNet would have.
at::Tensor channel_mean(int64_t channels) {
  return channels == 3 ? torch::tensor({0.485, 0.456, 0.406}) : torch::tensor({0.449});
}
at::Tensor channel_std(int64_t channels) {
  return channels == 3 ? torch::tensor({0.229, 0.224, 0.225}) : torch::tensor({0.226});
}

std::vector<double> column(const at::Tensor& t) {
  const auto c = t.to(at::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// Counts (tp, count, ...) are for the report; the per-epoch metrics keep rates.
bool is_count(const std::string& name) {
  return name == "tp" || name == "fp" || name == "tn" || name == "fn" || name == "count";
}

void add_named(tandem::Metrics& out, const std::string& prefix,
               const std::vector<std::pair<std::string, double>>& named) {
  for (const auto& [k, v] : named)
    if (!is_count(k) && k != "loss") out[prefix + k] = v;
}

// Scores of images and of persons, each under its level's prefix.
constexpr const char* kImageLevel = "image_";
constexpr const char* kPersonLevel = "person_";

void add_scores(tandem::Metrics& out, const std::string& prefix, const std::vector<std::vector<double>>& probs,
                const std::vector<int64_t>& labels, int64_t classes) {
  if (classes == 2) {
    std::vector<double> positive;
    for (const auto& row : probs) positive.push_back(row[1]);
    add_named(out, prefix, binary_metrics(positive, labels).named());
  } else {
    add_named(out, prefix, multiclass_metrics(probs, labels, classes).named());
  }
}

}  // namespace

std::vector<std::vector<double>> table_rows(const at::Tensor& t) {
  const auto c = t.to(at::kDouble).contiguous();
  std::vector<std::vector<double>> out(c.size(0));
  for (int64_t i = 0; i < c.size(0); ++i) out[i].assign(c[i].data_ptr<double>(), c[i].data_ptr<double>() + c.size(1));
  return out;
}

std::vector<double> balanced_class_weights(const std::vector<Sample>& samples, int64_t num_classes) {
  std::vector<double> count(num_classes, 0), weight(num_classes, 0);
  for (const auto& s : samples) count[s.label] += 1;
  for (int64_t k = 0; k < num_classes; ++k)
    if (count[k] > 0) weight[k] = static_cast<double>(samples.size()) / (num_classes * count[k]);
  return weight;
}

CarotidTask::CarotidTask(TaskOptions options, const ImageStore& store, std::vector<std::string> persons,
                         std::vector<Sample> train, std::vector<Sample> eval)
    : options_(std::move(options)),
      store_(store),
      persons_(std::move(persons)),
      train_(std::move(train)),
      eval_(std::move(eval)) {
  const int64_t channels = options_.model.resnet.in_channels;
  mean_ = channel_mean(channels).to(at::kFloat).view({channels, 1, 1});
  std_ = channel_std(channels).to(at::kFloat).view({channels, 1, 1});
  if (!options_.class_weights.empty()) class_weights_ = torch::tensor(options_.class_weights, torch::kFloat);
}

void CarotidTask::set_eval(std::vector<Sample> eval) { eval_ = std::move(eval); }

std::shared_ptr<torch::nn::Module> CarotidTask::build_model() { return build_classifier(options_.model).ptr(); }

tandem::Batch CarotidTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) {
  const auto& samples = train ? train_ : eval_;
  const int64_t n = static_cast<int64_t>(indices.size());
  const bool augment = train && options_.augment.enabled;
  std::vector<tandem::MixupDraw> mixes;
  if (augment && options_.mixup > 0)
    for (int64_t i : indices) mixes.push_back(tandem::mixup_draw(seed, i, train_size(), options_.mixup));
  // The batch's images, then the partners' they are mixed with.
  std::vector<int64_t> images(n), labels(n), partner_labels;
  for (int64_t k = 0; k < n; ++k) {
    images[k] = samples.at(indices[k]).image;
    labels[k] = samples[indices[k]].label;
  }
  for (const auto& m : mixes) {
    images.push_back(train_.at(m.partner).image);
    partner_labels.push_back(train_[m.partner].label);
  }
  const auto raw = store_.images(images);
  if (!augment) {
    // Unaugmented (evaluation, prediction, training without augmentation):
    // the images go to the device as the uint8 they are, a quarter of the
    // bytes of float32, and are normalised there (image_of), to the same bits.
    return {{"image_u8", torch::stack(raw)},
            {"label", torch::tensor(labels, torch::kLong)},
            {"sample", torch::tensor(indices, torch::kLong)}};
  }
  tandem::Batch batch = {{"image", augmented(raw, indices, mixes, seed)},
                         {"label", torch::tensor(labels, torch::kLong)},
                         {"sample", torch::tensor(indices, torch::kLong)}};
  if (!mixes.empty()) {
    std::vector<double> lam;
    for (const auto& m : mixes) lam.push_back(m.lam);
    batch["partner_label"] = torch::tensor(partner_labels, torch::kLong);
    batch["lam"] = torch::tensor(lam, torch::kDouble).to(torch::kFloat);
  }
  return batch;
}

at::Tensor CarotidTask::augmented(const std::vector<at::Tensor>& raw, const std::vector<int64_t>& indices,
                                  const std::vector<tandem::MixupDraw>& mixes, uint64_t seed) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  // Seeded by the sample, not by its place in a batch, so an image is
  // augmented alike on any number of ranks.
  const auto view = [&](int64_t slot, int64_t sample) {
    const at::Tensor image =
        tandem::image::augment(raw[slot].to(at::kFloat).div_(255), options_.image_size, options_.augment,
                               tandem::mix_seed(seed, static_cast<uint64_t>(sample)));
    return image.sub_(mean_).div_(std_);
  };
  std::vector<at::Tensor> views(n);
  for_each_index(n, options_.threads, [&](int64_t k) {
    views[k] = view(k, indices[k]);
    if (!mixes.empty()) {
      const double lam = mixes[k].lam;
      views[k].mul_(lam).add_(view(n + k, mixes[k].partner), 1 - lam);
    }
  });
  return torch::stack(views);
}

at::Tensor CarotidTask::image_of(const tandem::Batch& batch) {
  const auto u8 = batch.find("image_u8");
  if (u8 == batch.end()) return batch.at("image");
  const at::Tensor& raw = u8->second;
  // Every divisor a tensor on the batch's device: CUDA divides by a host
  // scalar as a multiply by its reciprocal, which rounds otherwise than the
  // CPU's true division; by a device tensor both divide alike, so the bits
  // are the host path's on either device.
  if (!device_mean_.defined() || device_mean_.device() != raw.device()) {
    device_scale_ = torch::full({1}, 255.0f, torch::TensorOptions().device(raw.device()));
    device_mean_ = mean_.to(raw.device());
    device_std_ = std_.to(raw.device());
  }
  return raw.to(at::kFloat).div_(device_scale_).sub_(device_mean_).div_(device_std_);
}

tandem::Loss CarotidTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  tandem::MixedTargets mixed;
  if (batch.count("lam")) mixed = {batch.at("partner_label"), batch.at("lam")};
  const at::Tensor image = image_of(batch);
  // Moved to the model's device once and kept there: a pageable host tensor
  // copied every micro-step makes the host wait for the device each time.
  if (class_weights_.defined() && class_weights_.device() != image.device())
    class_weights_ = class_weights_.to(image.device());
  return tandem::classification_loss(tandem::resnet_logits(model, image), batch.at("label"), batch.at("valid"),
                                     class_weights_, options_.label_smoothing, mixed);
}

tandem::EvalRows CarotidTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  const at::Tensor image = image_of(batch);
  at::Tensor logits = tandem::resnet_logits(model, image);
  if (options_.eval_hflip) {
    // The log of the mean probabilities: its softmax is that mean, so the
    // rows' probabilities and loss are those of the averaged prediction.
    const at::Tensor mirrored = tandem::resnet_logits(model, image.flip({3}));
    logits = ((logits.softmax(1) + mirrored.softmax(1)) / 2).log();
  }
  tandem::EvalRows rows =
      at_temperature({{"logit", logits.to(at::kFloat)}, {"label", batch.at("label")}}, options_.temperature);
  rows["sample"] = batch.at("sample");
  return rows;
}

tandem::Metrics CarotidTask::eval_metrics(const tandem::EvalRows& rows) {
  return classification_metrics(rows, eval_, persons_);
}

std::vector<std::string> CarotidTask::metric_names() const {
  return classification_metric_names(options_.model.resnet.num_classes);
}

// At either level, as the figure says (metrics/classifier_metrics.h).
std::string CarotidTask::metric_mode(const std::string& name) const {
  std::string figure = name;
  for (const char* level : {kImageLevel, kPersonLevel})
    if (figure.rfind(level, 0) == 0) figure = figure.substr(std::string(level).size());
  return figure_mode(figure);
}

std::vector<std::string> classification_metric_names(int64_t classes) {
  tandem::Metrics scores;
  add_named(scores, "", classes == 2 ? BinaryMetrics{}.named() : MulticlassMetrics{}.named());
  std::vector<std::string> names = {"loss"};
  for (const char* level : {kImageLevel, kPersonLevel})
    for (const auto& [name, value] : scores) names.push_back(level + name);
  return names;
}

tandem::Metrics classification_metrics(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                                       const std::vector<std::string>& persons) {
  const auto probs = table_rows(rows.at("prob"));
  const int64_t classes = rows.at("prob").size(1);
  const auto label_values = column(rows.at("label"));
  const std::vector<int64_t> labels(label_values.begin(), label_values.end());
  tandem::Metrics out;
  if (rows.count("loss")) out["loss"] = rows.at("loss").to(at::kDouble).mean().item<double>();
  add_scores(out, kImageLevel, probs, labels, classes);
  const auto scores = person_scores(rows, samples, persons);
  add_scores(out, kPersonLevel, scores.probs, scores.labels, classes);
  return out;
}

PersonScores person_scores(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                           const std::vector<std::string>& persons) {
  std::vector<std::string> person_of;
  std::vector<int64_t> labels;
  for (double s : column(rows.at("sample"))) {
    const Sample& sample = samples.at(static_cast<int64_t>(s));
    person_of.push_back(persons.at(sample.person));
    labels.push_back(sample.label);
  }
  return aggregate_by_person(person_of, table_rows(rows.at("prob")), labels);
}

}  // namespace carotid
