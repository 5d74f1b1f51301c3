#pragma once
// Where the classifier looked, for the people who read its output: Grad-CAM
// maps (tandem/nn/grad_cam.h) of the class predicted for each image, written
// as pictures and as numbers.
//
// Under DIR (predict's OUT/cam):
//   PERSON/IMAGE.png  the image with its map over it: the map through a jet
//                     colour scale (blue 0 to red 1, MATLAB's jet), half and
//                     half with the image, then scaled so its brightest
//                     channel is 255 (pytorch-grad-cam's show_cam_on_image);
//                     images under 128 pixels are enlarged by a whole factor
//                     (the image's pixels repeated, the map resized
//                     bilinearly) so a map can be read;
//   PERSON.png        the person's overlays in rows of up to 8, ordered by
//                     each image's probability of the class predicted for
//                     the person, highest first: the images that speak most
//                     for the person's call lead;
//   maps.h5           "maps" [N, S, S] float32 in [0, 1] at the models' image
//                     size S, "class" [N] (the predicted class's index) and
//                     "probability" [N], row i being maps.csv's row i;
//   maps.csv          index, image, person, predicted, probability, overlay.
// The pictures show the images: they carry patient data wherever they go.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "app/carotid_task.h"
#include "images/image_store.h"
#include "tandem/config/settings.h"
#include "tandem/train/task.h"
#include "tandem/train/inference_setup.h"

namespace tandem {
class World;
namespace nn {
class ResNetImpl;
}  // namespace nn
}  // namespace tandem

namespace carotid {

// The test report's key, declared once (tandem/config/settings.h).
struct CamReportKeys {
  bool cam = false;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("report.cam", k.cam,
          "train: with the test report, Grad-CAM maps of the test persons' images in RUN/cam, as predict --cam "
          "writes them (anew, like the report, when a finished run is continued)",
          tandem::any());
  }
};

// At the door: a folder that already holds anything would have maps of
// another run mixed in or overwritten. Throws UsageError naming it.
void check_cam_folder(const std::filesystem::path& dir);

// [N, s, s] maps resized bilinearly to [N, size, size] and scaled to [0, 1]
// each again (an ensemble's models may see the images at other sizes).
at::Tensor maps_at(const at::Tensor& maps, int64_t size);

struct CamImage {
  int64_t image = 0;  // index into the store
  std::string person;
  int64_t predicted = 0;   // the class its map explains
  double probability = 0;  // the image's probability of it
  double for_person = 0;   // the image's probability of its person's predicted class: the sheet's order
};

// Each sample's predicted class (at the threshold, as predict's images.csv
// decides it) with its probability, and its probability of the class its
// person is predicted (persons.csv's), from evaluation rows ("prob" and
// "sample", in any order) over `samples`.
std::vector<CamImage> cam_images(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                                 const std::vector<std::string>& persons, double threshold);

// One model's maps for every image of `task`'s evaluation list, images[i]
// explaining its `predicted` class: [N, size, size] on the CPU, each rank
// computing its share in micro-batches of `micro_batch` under the setup's
// precision, every rank getting all (a collective). Rank 0 warns when the
// model's last stage is 1 x 1 at this image size (every map flat).
at::Tensor class_maps(tandem::World& world, CarotidTask& task, tandem::nn::ResNetImpl& model,
                      const tandem::InferenceSetup& setup, const std::vector<CamImage>& images, int64_t micro_batch);

// Writes DIR as above (rank 0's work) and logs it: maps[i] is images[i]'s,
// at the store's size, the mean of `models` models' maps; class_names name
// the predicted classes.
void write_cam_report(const std::filesystem::path& dir, const std::vector<CamImage>& images, const at::Tensor& maps,
                      const ImageStore& store, const std::vector<std::string>& class_names, int64_t models = 1);

}  // namespace carotid
