#include "data/vf_features.h"

#include <torch/torch.h>

#include <filesystem>

#include "tandem/error.h"
#include "tandem/io/h5file.h"
#include "tandem/text/message_text.h"

namespace vavae {
namespace fs = std::filesystem;
using tandem::UsageError;

at::Tensor read_vf_features(const std::string& path, const std::string& key, const std::vector<ImageItem>& items,
                            const std::string& root, int64_t latent_size) {
  if (!fs::is_regular_file(path)) throw UsageError(key + ": " + path + " not found");
  const tandem::H5File file(path);
  std::vector<at::Tensor> rows;
  rows.reserve(items.size());
  std::vector<int64_t> want;
  for (const auto& item : items) {
    const std::string name = fs::path(item.path).lexically_relative(root).generic_string();
    if (!file.has(name))
      throw UsageError(key + ": " + path + " has no features for " + name +
                       " (one dataset per training image, named by its path under data.root)");
    const auto shape = file.shape(name);
    if (want.empty()) want = {shape.size() == 3 ? shape[0] : 0, latent_size, latent_size};
    if (shape != want || want[0] < 1)
      throw UsageError(key + ": " + path + ": " + name + " is " + tandem::shape_text(shape) + ", expected [C," +
                       std::to_string(latent_size) + "," + std::to_string(latent_size) + "] (the latent grid" + (rows.empty() ? "" : ", C = " + std::to_string(want[0]) + " as before") +
                       ")");
    const at::Tensor row = file.read(name);
    rows.push_back(rows.empty() ? row : row.to(rows.front().scalar_type()));
  }
  if (rows.empty()) throw UsageError(key + ": no training images to align");
  return torch::stack(rows);
}

}  // namespace vavae
