// Image decoding (image/read_image.h) as gray and as colour, then the resize
// every evaluation does and a training view: any bytes make an image or an
// ImageError naming the file, the decoder's way of refusing one.
#include <ATen/ATen.h>

#include "fuzz_input.h"
#include "tandem/image/read_image.h"
#include "tandem/image/transform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const std::string path = fuzz::write_input(data, size, "scan.img");
  for (int64_t channels : {1, 3}) {
    fuzz::expect_clean_or<image::ImageError>([&] {
      const at::Tensor decoded = image::read_image(path, channels);
      if (decoded.dim() != 3 || decoded.size(0) != channels) fuzz::fail("read_image gave another shape");
      const at::Tensor small = image::resize(decoded, 28, 28);
      const at::Tensor view = image::augment(decoded, 28, image::AugmentOptions{}, size);
      if (!at::isfinite(small).all().item<bool>() || !at::isfinite(view).all().item<bool>())
        fuzz::fail("resize or augment made a value that is not finite");
    });
  }
  return 0;
}
