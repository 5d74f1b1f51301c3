#include "app/image_settings.h"

#include <ATen/Parallel.h>

#include "tandem/config/config.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace carotid {

ImageStoreOptions image_store_options(const ImageKeys& k) {
  ImageStoreOptions o = k.store;
  o.threads = k.num_workers > 0 ? k.num_workers : at::get_num_threads();
  return o;
}

tandem::image::AugmentOptions augment_options(const tandem::Config& config, const AugKeys& k) {
  const tandem::image::AugmentOptions& a = k.augment;
  if (a.crop_scale_max < a.crop_scale_min)
    throw tandem::UsageError(
        "aug.crop_scale_max must be >= aug.crop_scale_min = " + tandem::number_text(a.crop_scale_min) + ", got " +
        tandem::number_text(a.crop_scale_max) + " (" + config.source("aug.crop_scale_max") + ")");
  return a;
}

double mixup_alpha(const AugKeys& k) { return k.augment.enabled ? k.mixup : 0; }

}  // namespace carotid
