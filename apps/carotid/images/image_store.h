#pragma once
// Every image of a run, decoded once: each rank decodes its share at the
// training size, the ranks exchange them, and the result is kept in memory
// (and in an HDF5 cache file that the next run with the same images reuses),
// so epochs do no decoding. When the images would not fit in memory they are
// decoded again for every batch instead. Either way every image is checked
// before training starts, so an unreadable one is skipped and counted (or
// stops the run, with data.strict) at the door rather than mid-epoch.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {
class World;
}  // namespace tandem

namespace carotid {

struct ImageStoreOptions {
  int64_t channels = 3;
  int64_t size = 224;
  bool cache = true;
  std::string cache_dir;  // empty: ~/.cache/tandem/carotid
  double cache_max_gb = 8.0;
  bool strict = false;
  bool persist = true;  // write the cache file (predict keeps it in memory only)
  int64_t threads = 1;  // decoding threads per rank
};

class ImageStore {
 public:
  // Collective: every rank calls it with the same paths. Throws UsageError
  // naming the first unreadable image (and how many there are) when strict.
  ImageStore(tandem::World& world, std::vector<std::string> paths, const ImageStoreOptions& options);

  int64_t size() const { return static_cast<int64_t>(paths_.size()); }
  const std::string& path(int64_t i) const { return paths_.at(i); }
  bool readable(int64_t i) const { return ok_.at(i) != 0; }
  int64_t unreadable_count() const;
  bool in_memory() const { return images_.defined(); }

  // uint8 [C, size, size]: the image decoded, converted to `channels` and
  // resized, as the cache holds it.
  at::Tensor image(int64_t i) const;
  // Several at once, decoded on `threads` threads when not in memory.
  std::vector<at::Tensor> images(const std::vector<int64_t>& indices) const;

 private:
  void decode_all(tandem::World& world, bool keep);
  bool load_cache(const std::string& file);
  void save_cache(const std::string& file) const;

  std::vector<std::string> paths_;
  ImageStoreOptions options_;
  std::vector<uint8_t> ok_;
  at::Tensor images_;  // uint8 [N, C, size, size] when in memory
};

// What the store does to one file: decode, convert, resize, round to 8 bits.
// Throws tandem::image::ImageError naming the file.
at::Tensor decode_for_store(const std::string& path, int64_t channels, int64_t size);

}  // namespace carotid
