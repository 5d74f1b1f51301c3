#include "tandem/nn/packed_rows.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

namespace tandem::nn {

namespace {

struct Row {
  int64_t flat, length;  // its first token's flat position, its tokens
};

std::vector<Row> rows_of(const at::Tensor& segments) {
  if (segments.dim() != 2 || segments.scalar_type() != at::kLong || !segments.device().is_cpu())
    throw std::invalid_argument("packed_rows: segments must be int64 [B, T] on the host");
  const auto seg = segments.accessor<int64_t, 2>();
  const int64_t width = segments.size(1);
  std::vector<Row> rows;
  for (int64_t b = 0; b < segments.size(0); ++b)
    for (int64_t t = 0; t < width; ++t) {
      if (seg[b][t] < 0) break;
      if (t == 0 || seg[b][t] != seg[b][t - 1]) rows.push_back({b * width + t, 0});
      ++rows.back().length;
    }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.length > b.length; });
  return rows;
}

at::Tensor with_zero_row(const at::Tensor& x) {
  return at::cat({x, at::zeros({1, x.size(1)}, x.options())});
}

}  // namespace

PackedRows packed_rows(const at::Tensor& segments) {
  const std::vector<Row> rows = rows_of(segments);
  const int64_t positions = segments.numel();
  PackedRows packed;
  packed.scatter = at::empty(segments.sizes(), at::kLong);
  int64_t slots = 0;
  for (size_t first = 0; first < rows.size();) {
    size_t end = first + 1;
    while (end < rows.size() && 4 * rows[end].length >= 3 * rows[first].length) ++end;
    const int64_t count = static_cast<int64_t>(end - first), length = rows[first].length;
    at::Tensor bucket = at::full({count, length}, positions, at::kLong);
    auto g = bucket.accessor<int64_t, 2>();
    for (int64_t r = 0; r < count; ++r)
      for (int64_t l = 0; l < rows[first + r].length; ++l) g[r][l] = rows[first + r].flat + l;
    packed.buckets.push_back(bucket);
    first = end;
  }
  // The slot past the last is the zero one, for padding.
  at::Tensor flat = packed.scatter.view({-1});
  int64_t total = 0;
  for (const at::Tensor& b : packed.buckets) total += b.numel();
  flat.fill_(total);
  auto s = flat.accessor<int64_t, 1>();
  for (const at::Tensor& b : packed.buckets) {
    const auto g = b.accessor<int64_t, 2>();
    for (int64_t r = 0; r < b.size(0); ++r)
      for (int64_t l = 0; l < b.size(1); ++l)
        if (g[r][l] < positions) s[g[r][l]] = slots + r * b.size(1) + l;
    slots += b.numel();
  }
  return packed;
}

std::vector<at::Tensor> to_rows(const at::Tensor& x, const PackedRows& rows) {
  const at::Tensor flat = with_zero_row(x.reshape({-1, x.size(2)}));
  std::vector<at::Tensor> out;
  for (const at::Tensor& bucket : rows.buckets)
    out.push_back(flat.index_select(0, bucket.view({-1})).view({bucket.size(0), bucket.size(1), x.size(2)}));
  return out;
}

at::Tensor from_rows(const std::vector<at::Tensor>& ys, const PackedRows& rows) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& y : ys) flat.push_back(y.reshape({-1, y.size(2)}));
  const at::Tensor all = with_zero_row(at::cat(flat));
  return all.index_select(0, rows.scatter.view({-1})).view({rows.scatter.size(0), rows.scatter.size(1), all.size(1)});
}

}  // namespace tandem::nn
