#include "app/image_settings.h"

#include <ATen/Parallel.h>

#include "tandem/config/config.h"
#include "tandem/error.h"
#include "tandem/text/number_text.h"

namespace carotid {

ImageStoreOptions image_store_options(const tandem::Config& config) {
  const ImageKeys k = tandem::read_keys<ImageKeys>(config);
  ImageStoreOptions o;
  o.channels = k.channels;
  o.size = k.image_size;
  o.cache = k.cache;
  o.cache_dir = k.cache_dir;
  o.cache_max_gb = k.cache_max_gb;
  o.strict = k.strict;
  o.threads = k.num_workers > 0 ? k.num_workers : at::get_num_threads();
  return o;
}

tandem::image::AugmentOptions augment_options(const tandem::Config& config, const AugKeys& k) {
  if (k.crop_scale_max < k.crop_scale_min)
    throw tandem::UsageError(
        "aug.crop_scale_max must be >= aug.crop_scale_min = " + tandem::number_text(k.crop_scale_min) + ", got " +
        tandem::number_text(k.crop_scale_max) + " (" + config.source("aug.crop_scale_max") + ")");
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

double mixup_alpha(const AugKeys& k) { return k.enabled ? k.mixup : 0; }

}  // namespace carotid
