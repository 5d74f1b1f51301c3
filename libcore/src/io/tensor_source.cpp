#include "tandem/io/tensor_source.h"

#include <stdexcept>

namespace tandem {

MemorySource::MemorySource(NamedTensors tensors) : tensors_(std::move(tensors)) {}

std::vector<std::string> MemorySource::names() const {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : tensors_) out.push_back(name);
  return out;
}

std::vector<int64_t> MemorySource::shape(const std::string& name) const { return read(name).sizes().vec(); }

at::Tensor MemorySource::read(const std::string& name) const {
  for (const auto& [n, tensor] : tensors_)
    if (n == name) return tensor;
  throw std::out_of_range("MemorySource: no tensor '" + name + "'");
}

at::Tensor MemorySource::read_rows(const std::string& name, int64_t begin, int64_t end) const {
  return read(name).narrow(0, begin, end - begin);
}

}  // namespace tandem
