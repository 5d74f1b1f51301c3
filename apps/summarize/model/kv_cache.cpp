#include "model/kv_cache.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace summarize {

KVCache::KVCache(int64_t layers, int64_t capacity) : capacity_(capacity) {
  if (layers < 1 || capacity < 1) {
    throw std::invalid_argument("KVCache: needs at least one layer and one position, got " + std::to_string(layers) +
                                " layers and " + std::to_string(capacity) + " positions");
  }
  layers_.resize(static_cast<size_t>(layers));
}

std::pair<at::Tensor, at::Tensor> KVCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
  Layer& cache = layers_.at(static_cast<size_t>(layer));
  const int64_t t = k.size(2);
  if (cache.length + t > capacity_) {
    throw std::length_error("KVCache: layer " + std::to_string(layer) + " holds " + std::to_string(cache.length) +
                            " positions of " + std::to_string(capacity_) + " and cannot take " + std::to_string(t) +
                            " more");
  }
  if (!cache.k.defined()) {
    cache.k = at::empty({k.size(0), k.size(1), capacity_, k.size(3)}, k.options());
    cache.v = at::empty({v.size(0), v.size(1), capacity_, v.size(3)}, v.options());
  }
  cache.k.narrow(2, cache.length, t).copy_(k);
  cache.v.narrow(2, cache.length, t).copy_(v);
  cache.length += t;
  return {cache.k.narrow(2, 0, cache.length), cache.v.narrow(2, 0, cache.length)};
}

void KVCache::keep_rows(const at::Tensor& rows) {
  for (Layer& layer : layers_) {
    if (!layer.k.defined()) continue;
    layer.k = layer.k.index_select(0, rows);
    layer.v = layer.v.index_select(0, rows);
  }
}

}  // namespace summarize
