#include "data/load_image.h"

#include "tandem/error.h"
#include "tandem/image/read_image.h"
#include "tandem/image/transform.h"

namespace vavae {

at::Tensor load_image(const std::string& path, int64_t size) {
  at::Tensor image;
  try {
    image = tandem::image::read_image(path, 3);
  } catch (const tandem::image::ImageError& e) {
    throw tandem::UsageError(e.what());
  }
  if (image.size(1) != size || image.size(2) != size) image = tandem::image::resize(image, size, size);
  return image.mul(2).sub_(1);
}

at::Tensor to_unit_range(const at::Tensor& image) { return image.add(1).div_(2).clamp_(0, 1); }

}  // namespace vavae
