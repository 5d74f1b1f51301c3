#include "h5_handle.h"

namespace tandem::h5 {

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string reason() {
  std::string innermost;
  // Walking upward starts at the function where the error arose, whose message
  // is the specific one (e.g. errno text), rather than the API's generic one.
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* err, void* out) -> herr_t {
        auto& text = *static_cast<std::string*>(out);
        if (text.empty() && err->desc != nullptr) text = err->desc;
        return 0;
      },
      &innermost);
  H5Eclear2(H5E_DEFAULT);
  return innermost.empty() ? "" : " (HDF5: " + innermost + ")";
}

}  // namespace tandem::h5
