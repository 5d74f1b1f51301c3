#include "app/image_settings.h"

#include <ATen/Parallel.h>

#include "tandem/config/config.h"
#include "tandem/error.h"
#include "tandem/text/number_text.h"

namespace carotid {

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
  const AugKeys k = tandem::read_keys<AugKeys>(c);
  if (k.crop_scale_max < k.crop_scale_min)
    throw tandem::UsageError(
        "aug.crop_scale_max must be >= aug.crop_scale_min = " + tandem::number_text(k.crop_scale_min) + ", got " +
        tandem::number_text(k.crop_scale_max) + " (" + c.source("aug.crop_scale_max") + ")");
  tandem::image::AugmentOptions a;
  a.enabled = k.enabled;
  a.crop_scale_min = k.crop_scale_min;
  a.crop_scale_max = k.crop_scale_max;
  a.hflip = k.hflip;
  a.rotate_degrees = k.rotate_degrees;
  a.brightness = k.brightness;
  a.contrast = k.contrast;
  return a;
}

double mixup_alpha(const tandem::Config& c) {
  const AugKeys k = tandem::read_keys<AugKeys>(c);
  return k.enabled ? k.mixup : 0;
}

}  // namespace carotid
