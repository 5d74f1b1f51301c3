#include "app/image_settings.h"

#include <ATen/Parallel.h>

#include "tandem/config/config.h"
#include "tandem/error.h"

namespace carotid {

namespace {

double in_range(const tandem::Config& c, const std::string& key, double low, double high) {
  const double v = c.get_double(key);
  if (!(v >= low && v <= high))
    throw tandem::UsageError(key + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], not " +
                             std::to_string(v) + " (" + c.source(key) + ")");
  return v;
}

}  // namespace

ImageStoreOptions image_store_options(const tandem::Config& c) {
  ImageStoreOptions o;
  o.channels = c.get_int("data.channels");
  o.size = c.get_int("data.image_size");
  o.cache = c.get_bool("data.cache");
  o.cache_dir = c.get_string("data.cache_dir");
  o.cache_max_gb = c.get_double("data.cache_max_gb");
  o.strict = c.get_bool("data.strict");
  const int64_t workers = c.get_int("data.num_workers");
  if (workers < 0) throw tandem::UsageError("data.num_workers must be >= 0, not " + std::to_string(workers));
  o.threads = workers > 0 ? workers : at::get_num_threads();
  return o;
}

tandem::image::AugmentOptions augment_options(const tandem::Config& c) {
  tandem::image::AugmentOptions a;
  a.enabled = c.get_bool("aug.enabled");
  a.crop_scale_min = in_range(c, "aug.crop_scale_min", 0.01, 1);
  a.crop_scale_max = in_range(c, "aug.crop_scale_max", a.crop_scale_min, 1);
  a.hflip = in_range(c, "aug.hflip", 0, 1);
  a.rotate_degrees = in_range(c, "aug.rotate_degrees", 0, 180);
  a.brightness = in_range(c, "aug.brightness", 0, 1);
  a.contrast = in_range(c, "aug.contrast", 0, 1);
  return a;
}

double mixup_alpha(const tandem::Config& c) {
  const double a = in_range(c, "aug.mixup", 0, 10);
  return c.get_bool("aug.enabled") ? a : 0;
}

}  // namespace carotid
