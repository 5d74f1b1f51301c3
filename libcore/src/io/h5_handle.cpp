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

std::string unreadable(const std::string& what) { return what + " (damaged or truncated?)" + reason(); }

bool compressed(hid_t dataset) {
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  if (!plist.valid()) return true;
  const int filters = H5Pget_nfilters(plist.get());
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    if (H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &values, nullptr, 0, nullptr, &config) !=
        H5Z_FILTER_FLETCHER32)
      return true;
  }
  return filters < 0;
}

}  // namespace tandem::h5
