#pragma once
// The data.* and aug.* keys that say how images are read and augmented.
#include "images/image_store.h"
#include "tandem/image/transform.h"

namespace tandem {
class Config;
}  // namespace tandem

namespace carotid {

// data.num_workers 0 means the rank's compute threads.
ImageStoreOptions image_store_options(const tandem::Config& config);
// Throws UsageError naming the aug.* key for values outside their range.
tandem::image::AugmentOptions augment_options(const tandem::Config& config);
// aug.mixup's a (0: off), checked like the other aug.* keys; 0 when
// aug.enabled is false.
double mixup_alpha(const tandem::Config& config);

}  // namespace carotid
