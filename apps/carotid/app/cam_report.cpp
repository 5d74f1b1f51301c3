#include "app/cam_report.h"

#include <torch/nn/functional/upsampling.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "metrics/threshold.h"
#include "tandem/data/csv.h"
#include "tandem/data/eval_shard.h"
#include "tandem/data/loader.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/image/write_png.h"
#include "tandem/io/h5file.h"
#include "tandem/nn/grad_cam.h"
#include "tandem/nn/resnet.h"
#include "tandem/obs/log.h"
#include "tandem/train/autocast_guard.h"

namespace carotid {
namespace fs = std::filesystem;
namespace F = torch::nn::functional;

namespace {

constexpr int64_t kReadableSide = 128;  // overlays smaller than this are enlarged
constexpr int64_t kSheetColumns = 8;
constexpr int64_t kSheetGap = 2;  // white pixels between a sheet's pictures

at::Tensor resized(const at::Tensor& maps, int64_t size) {
  return F::interpolate(maps.unsqueeze(1), F::InterpolateFuncOptions()
                                               .size(std::vector<int64_t>{size, size})
                                               .mode(torch::kBilinear)
                                               .align_corners(false))
      .squeeze(1);
}

// MATLAB's jet on [0, 1] -> [3, H, W] RGB in [0, 1], from the map rounded
// down to 8 bits as show_cam_on_image's np.uint8(255 * mask) rounds it.
at::Tensor jet(const at::Tensor& map) {
  const at::Tensor x = (map * 255).floor() / 255;
  const auto channel = [&](double centre) { return (1.5 - (4 * x - centre).abs()).clamp(0, 1); };
  return torch::stack({channel(3), channel(2), channel(1)});
}

// The image [C, S, S] uint8 and its map [S, S] -> the overlay [3, kS, kS] uint8.
at::Tensor overlay(const at::Tensor& image, const at::Tensor& map) {
  const int64_t size = image.size(1), k = std::max<int64_t>(1, (kReadableSide + size - 1) / size);
  at::Tensor rgb = image.to(torch::kFloat) / 255;
  if (rgb.size(0) == 1) rgb = rgb.expand({3, size, size});
  rgb = rgb.repeat_interleave(k, 1).repeat_interleave(k, 2);
  const at::Tensor big = k == 1 ? map : tandem::nn::scale_each_map(resized(map.unsqueeze(0), size * k)).squeeze(0);
  at::Tensor mixed = 0.5 * jet(big) + 0.5 * rgb;
  mixed = mixed / mixed.max().clamp_min(1e-12);
  return (mixed * 255).to(torch::kUInt8);
}

// Pictures [3, s, s] in rows of up to kSheetColumns, white between them.
at::Tensor contact_sheet(const std::vector<at::Tensor>& pictures) {
  const int64_t n = static_cast<int64_t>(pictures.size()), side = pictures.front().size(1);
  const int64_t columns = std::min(n, kSheetColumns), rows = (n + columns - 1) / columns;
  at::Tensor sheet = torch::full({3, rows * side + (rows - 1) * kSheetGap, columns * side + (columns - 1) * kSheetGap},
                                 255, torch::kUInt8);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = (i / columns) * (side + kSheetGap), left = (i % columns) * (side + kSheetGap);
    sheet.narrow(1, top, side).narrow(2, left, side).copy_(pictures[i]);
  }
  return sheet;
}

// Each image's overlay name in its person's folder: the file's stem, or its
// whole name where two of the person's files share a stem.
std::vector<std::string> overlay_names(const std::vector<CamImage>& images, const ImageStore& store) {
  std::map<std::pair<std::string, std::string>, int> stems;
  for (const auto& im : images) ++stems[{im.person, fs::path(store.path(im.image)).stem().string()}];
  std::vector<std::string> names;
  for (const auto& im : images) {
    const fs::path file = store.path(im.image);
    names.push_back((stems[{im.person, file.stem().string()}] > 1 ? file.filename().string() : file.stem().string()) +
                    ".png");
  }
  return names;
}

void write_maps(const fs::path& dir, const std::vector<CamImage>& images, const at::Tensor& maps,
                const ImageStore& store, const std::vector<std::string>& class_names,
                const std::vector<std::string>& names) {
  std::vector<int64_t> classes;
  std::vector<double> probabilities;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < images.size(); ++i) {
    classes.push_back(images[i].predicted);
    probabilities.push_back(images[i].probability);
    char p[32];
    std::snprintf(p, sizeof p, "%.6f", images[i].probability);
    rows.push_back({std::to_string(i), store.path(images[i].image), images[i].person,
                    class_names.at(images[i].predicted), p, (fs::path(images[i].person) / names[i]).string()});
  }
  tandem::H5File h5((dir / "maps.h5").string(), tandem::H5File::Mode::kCreate);
  h5.write("maps", maps.to(torch::kFloat).contiguous());
  h5.write("class", torch::tensor(classes, torch::kLong));
  h5.write("probability", torch::tensor(probabilities, torch::kDouble));
  h5.close();
  tandem::write_csv((dir / "maps.csv").string(), {"index", "image", "person", "predicted", "probability", "overlay"},
                    rows);
}

}  // namespace

void check_cam_folder(const fs::path& dir) {
  if (fs::exists(dir) && (!fs::is_directory(dir) || !fs::is_empty(dir)))
    throw tandem::UsageError(dir.string() +
                             " already holds maps (or is a file): move it away, or write elsewhere (predict's "
                             "cmd.out); nothing there is overwritten");
}

namespace {

// The ImageNet stem on small images leaves layer4 1 x 1: say so once, with
// what would keep a map.
void warn_if_flat(const tandem::nn::ResNetImpl& model, int64_t size) {
  if (model.options().feature_map_side(size) >= 2) return;
  tandem::nn::ResNetOptions small = model.options();
  small.stem = "small";
  const int64_t side = small.feature_map_side(size);
  tandem::log::warn("Grad-CAM: the model sees ", size, "-pixel images through the ", model.options().stem,
                    " stem, which leaves its last stage one value an image: its maps are flat (0) and show nothing; "
                    "model.stem = \"small\" keeps a map of ",
                    side, " x ", side);
}

}  // namespace

at::Tensor class_maps(tandem::World& world, CarotidTask& task, tandem::nn::ResNetImpl& model,
                      const tandem::InferenceSetup& setup, const std::vector<CamImage>& images, int64_t micro_batch) {
  model.eval();
  const int64_t n = task.eval_size();
  const tandem::EvalShard shard = tandem::eval_shard(n, world.size(), world.rank());
  std::vector<at::Tensor> mine;
  for (const auto& mb : shard.micro_batches(micro_batch)) {
    const tandem::Batch batch = tandem::to_device(task.make_batch(mb.indices, /*train=*/false, 0), setup.device);
    std::vector<int64_t> explained;
    for (int64_t i : mb.indices) explained.push_back(images.at(i).predicted);
    const at::Tensor input = task.image_of(batch);
    if (mine.empty() && world.is_main()) warn_if_flat(model, input.size(2));
    tandem::AutocastGuard autocast(setup.precision, setup.device.is_cuda());
    mine.push_back(tandem::nn::grad_cam(model, input, torch::tensor(explained, torch::kLong)).cpu());
  }
  return tandem::gather_in_order(world, n, torch::cat(mine));
}

std::vector<CamImage> cam_images(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                                 const std::vector<std::string>& persons, double threshold) {
  const PersonScores scores = person_scores(rows, samples, persons);
  std::map<std::string, int64_t> person_class;
  for (size_t p = 0; p < scores.persons.size(); ++p)
    person_class[scores.persons[p]] = decided_class(scores.probs[p], threshold);
  std::vector<CamImage> images(samples.size());
  const auto probs = table_rows(rows.at("prob"));
  const auto order = rows.at("sample").to(at::kLong).contiguous();
  for (size_t k = 0; k < probs.size(); ++k) {
    const int64_t i = order.data_ptr<int64_t>()[k];
    const Sample& s = samples.at(i);
    const int64_t predicted = decided_class(probs[k], threshold);
    const std::string& person = persons[s.person];
    images[i] = {s.image, person, predicted, probs[k][predicted], probs[k][person_class.at(person)]};
  }
  return images;
}

at::Tensor maps_at(const at::Tensor& maps, int64_t size) {
  if (maps.size(1) == size) return maps;
  return tandem::nn::scale_each_map(resized(maps, size));
}

void write_cam_report(const fs::path& dir, const std::vector<CamImage>& images, const at::Tensor& maps,
                      const ImageStore& store, const std::vector<std::string>& class_names, int64_t models) {
  check_cam_folder(dir);
  const std::vector<std::string> names = overlay_names(images, store);
  std::map<std::string, std::vector<size_t>> of_person;
  for (size_t i = 0; i < images.size(); ++i) of_person[images[i].person].push_back(i);
  for (auto& [person, members] : of_person) {
    fs::create_directories(dir / person);
    std::stable_sort(members.begin(), members.end(),
                     [&](size_t a, size_t b) { return images[a].for_person > images[b].for_person; });
    std::vector<at::Tensor> pictures;
    for (size_t i : members) {
      pictures.push_back(overlay(store.image(images[i].image), maps[static_cast<int64_t>(i)]));
      tandem::image::write_png((dir / person / names[i]).string(), pictures.back());
    }
    tandem::image::write_png((dir / (person + ".png")).string(), contact_sheet(pictures));
  }
  write_maps(dir, images, maps, store, class_names, names);
  tandem::log::info("Grad-CAM maps of ", images.size(), " images", models > 1 ? " (averaged over the models)" : "",
                    " in ", dir.string(),
                    ": an overlay per image, a contact sheet per person, maps.h5 and maps.csv. They show the images: "
                    "they carry patient data wherever they are copied");
}

}  // namespace carotid
