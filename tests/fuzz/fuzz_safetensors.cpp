// The safetensors reader (io/safetensors.h): any bytes make tensors or a
// UsageError, and tensors read are written back and read again unchanged.
#include <torch/torch.h>

#include "fuzz_input.h"
#include "tandem/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const std::string path = fuzz::write_input(data, size, "model.safetensors");
  fuzz::expect_clean([&] { read_safetensors_metadata(path); });
  fuzz::expect_clean([&] {
    const NamedTensors tensors = read_safetensors(path);
    const SafetensorsMetadata metadata = read_safetensors_metadata(path);
    const std::string copy = fuzz::scratch_path("copy.safetensors");
    write_safetensors(copy, tensors, metadata);
    const NamedTensors again = read_safetensors(copy);
    const auto bytes = [](const at::Tensor& t) { return t.reshape({-1}).contiguous().view(torch::kByte); };
    bool same = again.size() == tensors.size() && read_safetensors_metadata(copy) == metadata;
    for (size_t i = 0; same && i < tensors.size(); ++i) {
      // Written sorted by element size then name, not in the input's order.
      const auto match = std::find_if(again.begin(), again.end(), [&](const auto& t) { return t.first == tensors[i].first; });
      same = match != again.end() && match->second.scalar_type() == tensors[i].second.scalar_type() &&
             match->second.sizes() == tensors[i].second.sizes() &&
             torch::equal(bytes(match->second), bytes(tensors[i].second));
    }
    if (!same) fuzz::fail("write_safetensors then read_safetensors changed the tensors of " + path);
  });
  return 0;
}
