#pragma once
// Keys and values of the positions a model has already seen, per attention
// layer, so that generating a token costs one position's work instead of the
// whole prefix's. For inference only: buffers are written in place.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace summarize {

class KVCache {
 public:
  // Each layer's buffers are allocated on its first append, for `capacity`
  // positions, with the batch size, heads, head size, dtype and device given.
  KVCache(int64_t layers, int64_t capacity);

  int64_t layers() const { return static_cast<int64_t>(layers_.size()); }
  int64_t capacity() const { return capacity_; }
  // Positions cached: the same in every layer between forward passes.
  int64_t length() const { return layers_.front().length; }

  // Stores `layer`'s keys and values [B,H,T,D] for its next T positions and
  // returns those of all its positions so far, [B,H,length+T,D] (views of the
  // buffers). Throws std::length_error past the capacity.
  std::pair<at::Tensor, at::Tensor> append(int64_t layer, const at::Tensor& k, const at::Tensor& v);

  // Keeps only the batch rows `rows` (int64 indices, on the cache's device),
  // in that order, in every layer: rows that ended generating leave.
  void keep_rows(const at::Tensor& rows);

 private:
  struct Layer {
    at::Tensor k, v;
    int64_t length = 0;
  };
  std::vector<Layer> layers_;
  int64_t capacity_;
};

}  // namespace summarize
