#pragma once
// The data.* and aug.* keys that say how images are read and augmented.
#include <cstdint>
#include <string>

#include "images/image_store.h"
#include "tandem/config/settings.h"
#include "tandem/image/transform.h"

namespace carotid {

// The data.* keys that say how images are read and kept, each declared once
// (tandem/config/settings.h).
struct ImageKeys {
  ImageStoreOptions store;  // its threads come from num_workers
  int64_t num_workers = 0;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("data.channels", k.store.channels, "image channels the model sees: 1 (gray) or 3 (RGB)",
          tandem::one_of_counts({1, 3}));
    visit("data.image_size", k.store.size, "images are resized to this many pixels square", tandem::in_range(16, 4096));
    visit("data.strict", k.store.strict, "stop at the first unreadable image instead of skipping it", any());
    visit("data.cache", k.store.cache,
          "decode every image once, at image_size, into an HDF5 cache kept in memory, so epochs do "
          "no decoding (skipped when larger than data.cache_max_gb)",
          any());
    visit("data.cache_dir", k.store.cache_dir, "where image caches are kept; empty: ~/.cache/tandem/carotid", any());
    visit("data.cache_max_gb", k.store.cache_max_gb, "largest image cache held in memory per rank, GB",
          tandem::at_least(0));
    visit("data.num_workers", k.num_workers, "threads per rank decoding images; 0: the rank's compute threads",
          tandem::at_least(0));
  }
};

// The aug.* keys, each declared once (tandem/config/settings.h).
struct AugKeys {
  tandem::image::AugmentOptions augment;  // its aspect ratios keep torchvision's defaults
  double mixup = 0.0;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::in_range;
    visit("aug.enabled", k.augment.enabled, "augment training images (never evaluation images)", tandem::any());
    visit("aug.crop_scale_min", k.augment.crop_scale_min,
          "random resized crop: smallest share of the image's area kept", in_range(0.01, 1));
    visit("aug.crop_scale_max", k.augment.crop_scale_max, "random resized crop: largest share of the image's area kept",
          in_range(0.01, 1));
    visit("aug.hflip", k.augment.hflip, "probability of a horizontal flip", in_range(0, 1));
    visit("aug.rotate_degrees", k.augment.rotate_degrees, "random rotation within +- this many degrees",
          in_range(0, 180));
    visit("aug.brightness", k.augment.brightness, "brightness factor drawn from [1 - b, 1 + b]", in_range(0, 1));
    visit("aug.contrast", k.augment.contrast, "contrast factor drawn from [1 - c, 1 + c]", in_range(0, 1));
    visit("aug.mixup", k.mixup,
          "mixup's a: each training image is blended with another drawn from the training set, keeping a share "
          "drawn from Beta(a, a), and its target alike; in [0, 10], 0: off; off with aug.enabled = false",
          in_range(0, 10));
  }
};

// The store's options from `keys`: read_keys of the user's config, or
// read_fields of the config a model file carries. data.num_workers 0 means
// the rank's compute threads.
ImageStoreOptions image_store_options(const ImageKeys& keys);
// `keys` (read_keys<AugKeys> of `config`) as the image transform takes them.
// Throws UsageError for aug.crop_scale_max below aug.crop_scale_min.
tandem::image::AugmentOptions augment_options(const tandem::Config& config, const AugKeys& keys);
// aug.mixup's a (0: off); 0 when aug.enabled is false.
double mixup_alpha(const AugKeys& keys);

}  // namespace carotid
