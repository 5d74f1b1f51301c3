#include "images/image_store.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "images/for_each_index.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/image/read_image.h"
#include "tandem/image/transform.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/h5file.h"
#include "tandem/obs/log.h"
#include "tandem/random.h"

namespace carotid {
namespace fs = std::filesystem;
namespace log = tandem::log;

namespace {

// Bounds what one exchange between ranks holds, whatever the image size.
constexpr int64_t kRoundBytes = 64ll << 20;

std::string default_cache_dir() {
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "tandem" / "carotid").string();
}

// Names the cache by everything that decides its contents: the settings and,
// for every image, its path, size and modification time, so an edited or
// replaced image makes a new cache rather than a stale one.
std::string cache_key(const std::vector<std::string>& paths, int64_t channels, int64_t size) {
  std::string text = "v1 " + std::to_string(channels) + " " + std::to_string(size) + "\n";
  for (const auto& p : paths) {
    std::error_code ec;
    const auto bytes = fs::file_size(p, ec);
    const auto when = fs::last_write_time(p, ec).time_since_epoch().count();
    text += p + "\t" + std::to_string(ec ? 0 : bytes) + "\t" + std::to_string(ec ? 0 : when) + "\n";
  }
  return tandem::Fnv1a64().add(text).hex();
}

std::string reason(const std::string& path, int64_t channels, int64_t size) {
  try {
    decode_for_store(path, channels, size);
    return path + ": read now, but not when checked";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

at::Tensor decode_for_store(const std::string& path, int64_t channels, int64_t size) {
  at::Tensor image = tandem::image::read_image(path, channels);
  if (image.size(1) != size || image.size(2) != size) image = tandem::image::resize(image, size, size);
  return image.mul(255).round_().clamp_(0, 255).to(at::kByte);
}

ImageStore::ImageStore(tandem::World& world, std::vector<std::string> paths, const ImageStoreOptions& options)
    : paths_(std::move(paths)), options_(options), ok_(paths_.size(), 0) {
  const int64_t n = size();
  const int64_t per_image = options_.channels * options_.size * options_.size;
  const double gb = static_cast<double>(n) * per_image / 1e9;
  bool keep = options_.cache;
  if (keep && gb > options_.cache_max_gb) {
    keep = false;
    if (world.is_main())
      log::info("images: not cached (", gb, " GB > data.cache_max_gb ", options_.cache_max_gb,
                "); decoded for every batch");
  }
  const std::string dir = options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir;
  const std::string file = (fs::path(dir) / (cache_key(paths_, options_.channels, options_.size) + ".h5")).string();
  if (!(keep && options_.persist && load_cache(file))) {
    decode_all(world, keep);
    if (keep && options_.persist && world.is_main()) {
      try {
        save_cache(file);
        log::info("images: cached in ", file);
      } catch (const std::exception& e) {
        log::warn("images: could not write the cache (", e.what(), "); the run goes on without it");
      }
    }
  } else if (world.is_main()) {
    log::info("images: ", n, " read from the cache ", file);
  }

  const int64_t bad = unreadable_count();
  if (bad == 0) return;
  std::vector<std::string> failed;
  for (int64_t i = 0; i < n && failed.size() < 5; ++i)
    if (!readable(i)) failed.push_back(reason(paths_[i], options_.channels, options_.size));
  if (options_.strict)
    throw tandem::UsageError(std::to_string(bad) + " of " + std::to_string(n) +
                             " images cannot be read (data.strict = true); the first: " + failed[0]);
  if (world.is_main()) {
    log::warn("images: ", bad, " of ", n, " cannot be read and are skipped; the first ", failed.size(), ":");
    for (const auto& line : failed) log::warn("  ", line);
  }
}

int64_t ImageStore::unreadable_count() const {
  int64_t bad = 0;
  for (uint8_t ok : ok_) bad += ok ? 0 : 1;
  return bad;
}

// Rank r decodes images r, r + W, r + 2W, ... in rounds of `chunk` images;
// after each round every rank has every rank's images (or only their
// readable flags, when nothing is kept).
void ImageStore::decode_all(tandem::World& world, bool keep) {
  const int64_t n = size(), ranks = world.size(), rank = world.rank();
  const int64_t per_image = options_.channels * options_.size * options_.size;
  const int64_t record = keep ? per_image + 1 : 1;
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(kRoundBytes / record, (n + ranks - 1) / ranks));
  if (keep) images_ = at::empty({n, options_.channels, options_.size, options_.size}, at::kByte);
  std::vector<uint8_t> mine(chunk * record), all(chunk * record * ranks);
  for (int64_t first = 0; first < n; first += chunk * ranks) {
    std::fill(mine.begin(), mine.end(), 0);
    for_each_index(chunk, options_.threads, [&](int64_t j) {
      const int64_t i = first + j * ranks + rank;
      if (i >= n) return;
      uint8_t* out = mine.data() + j * record;
      try {
        const at::Tensor image = decode_for_store(paths_[i], options_.channels, options_.size);
        if (keep) std::memcpy(out + 1, image.contiguous().data_ptr<uint8_t>(), per_image);
        out[0] = 1;
      } catch (const tandem::image::ImageError&) {
        out[0] = 0;
      }
    });
    world.allgather_bytes(mine.data(), mine.size(), all.data());
    for (int64_t r = 0; r < ranks; ++r)
      for (int64_t j = 0; j < chunk; ++j) {
        const int64_t i = first + j * ranks + r;
        if (i >= n) continue;
        const uint8_t* in = all.data() + (r * chunk + j) * record;
        ok_[i] = in[0];
        if (keep && in[0]) std::memcpy(images_[i].data_ptr<uint8_t>(), in + 1, per_image);
      }
  }
}

bool ImageStore::load_cache(const std::string& file) {
  if (!fs::is_regular_file(file)) return false;
  try {
    tandem::H5File h5(file);
    const at::Tensor images = h5.read("images");
    const at::Tensor ok = h5.read("ok");
    if (images.dim() != 4 || images.size(0) != size() || ok.numel() != size()) return false;
    images_ = images;
    const auto* flags = ok.to(at::kByte).contiguous().data_ptr<uint8_t>();
    ok_.assign(flags, flags + size());
    return true;
  } catch (const std::exception& e) {
    log::warn("images: cache ", file, " unreadable (", e.what(), "); decoding again");
    return false;
  }
}

void ImageStore::save_cache(const std::string& file) const {
  fs::create_directories(fs::path(file).parent_path());
  tandem::replace_atomically(file, [&](const std::string& temp) {
    tandem::H5File h5(temp, tandem::H5File::Mode::kCreate);
    h5.write("images", images_);
    h5.write("ok", torch::from_blob(const_cast<uint8_t*>(ok_.data()), {size()}, at::kByte).clone());
    h5.set_attr("", "channels", options_.channels);
    h5.set_attr("", "size", options_.size);
    h5.close();
  });
}

at::Tensor ImageStore::image(int64_t i) const {
  if (in_memory()) return images_[i];
  try {
    return decode_for_store(paths_.at(i), options_.channels, options_.size);
  } catch (const tandem::image::ImageError& e) {
    // Decoded again for every batch, an image can go away mid-run. Skipping
    // it would change the batches a resume replays; the run stops instead.
    throw std::runtime_error(std::string(e.what()) +
                             " (it was read when the run started: changed or removed since?)");
  }
}

std::vector<at::Tensor> ImageStore::images(const std::vector<int64_t>& indices) const {
  std::vector<at::Tensor> out(indices.size());
  for_each_index(static_cast<int64_t>(indices.size()), in_memory() ? 1 : options_.threads,
                 [&](int64_t k) { out[k] = image(indices[k]); });
  return out;
}

}  // namespace carotid
