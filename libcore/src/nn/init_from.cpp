#include "tandem/nn/init_from.h"

#include <torch/torch.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "tandem/text/message_text.h"

namespace tandem::nn {

namespace {

bool has_prefix(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name.rfind(p, 0) == 0; });
}

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool listed(const std::string& name, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Convolution weights [out, in, kh, kw] that differ in `in` only.
bool differ_in_channels_only(const at::Tensor& file, const at::Tensor& model) {
  if (file.dim() != 4 || model.dim() != 4) return false;
  for (int64_t d : {0, 2, 3})
    if (file.size(d) != model.size(d)) return false;
  return true;
}

// timm's adapt_input_conv, for any channel counts (see InitOptions).
at::Tensor adapt_channels(const at::Tensor& weight, int64_t channels, std::string* how) {
  const at::Tensor w = weight.to(at::kFloat);
  const int64_t have = w.size(1);
  const std::string from = std::to_string(have) + " input channel" + (have == 1 ? "" : "s");
  if (channels == 1) {
    *how = from + " summed into 1";
    return w.sum(1, /*keepdim=*/true);
  }
  const int64_t repeats = (channels + have - 1) / have;
  *how = from + " repeated into " + std::to_string(channels) + ", scaled by " + std::to_string(have) + "/" +
         std::to_string(channels);
  return w.repeat({1, repeats, 1, 1}).narrow(1, 0, channels) * (static_cast<double>(have) / channels);
}

// The name alone, from a report entry "name: why".
std::vector<std::string> names_of(const std::vector<std::string>& entries) {
  std::vector<std::string> names;
  for (const auto& entry : entries) names.push_back(entry.substr(0, entry.find(": ")));
  return names;
}

}  // namespace

std::string InitReport::summary() const {
  const auto part = [](const char* what, const std::vector<std::string>& names) {
    std::string out = std::to_string(names.size()) + " " + what;
    if (!names.empty()) out += " (" + first_few(names, 3) + ")";
    return out;
  };
  return part("loaded", loaded) + ", " + part("skipped", names_of(skipped)) + ", " + part("adapted", names_of(adapted));
}

InitReport init_from_safetensors(torch::nn::Module& model, const std::string& path, const InitOptions& options) {
  const NamedTensors file = read_safetensors(path);
  std::unordered_map<std::string, const at::Tensor*> in_file;
  for (const auto& [name, tensor] : file) in_file.emplace(name, &tensor);

  NamedTensors targets;
  for (const auto& item : model.named_parameters()) targets.emplace_back(item.key(), item.value());
  const size_t first_buffer = targets.size();
  for (const auto& item : model.named_buffers()) targets.emplace_back(item.key(), item.value());

  InitReport report;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // target, source
  std::vector<std::string> missing, reshaped, unexpected;
  std::unordered_set<std::string> in_model;
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& [name, target] = targets[i];
    in_model.insert(name);
    const bool may_differ = has_prefix(name, options.may_differ);
    const auto it = in_file.find(name);
    if (it == in_file.end()) {
      // The counter only matters to BatchNorm with momentum None: files written
      // without it (by exporters that keep only floating-point state) lose nothing.
      const bool counter = i >= first_buffer && ends_with(name, "num_batches_tracked");
      if (counter || may_differ)
        report.skipped.push_back(name + ": not in file (kept as initialised)");
      else
        missing.push_back(name);
      continue;
    }
    const at::Tensor& source = *it->second;
    if (source.sizes() == target.sizes()) {
      copies.emplace_back(target, source);
      report.loaded.push_back(name);
    } else if (listed(name, options.adapt_in_channels) && differ_in_channels_only(source, target)) {
      std::string how;
      copies.emplace_back(target, adapt_channels(source, target.size(1), &how));
      report.adapted.push_back(name + ": " + how);
    } else if (may_differ) {
      report.skipped.push_back(name + ": shape " + shape_text(source.sizes()) + " in file, " + shape_text(target.sizes()) +
                               " in model (kept as initialised)");
    } else {
      reshaped.push_back(name + ": " + shape_text(source.sizes()) + " in file, " + shape_text(target.sizes()) + " in model");
    }
  }
  for (const auto& [name, tensor] : file) {
    if (in_model.count(name)) continue;
    if (options.allow_unexpected)
      report.skipped.push_back(name + ": not in model");
    else
      unexpected.push_back(name);
  }

  if (!missing.empty() || !reshaped.empty() || !unexpected.empty()) {
    std::string message = path + ": weights do not fit the model";
    if (!missing.empty())
      message += "; " + std::to_string(missing.size()) + " missing from the file: " + first_few(missing);
    if (!reshaped.empty()) {
      message += "; " + std::to_string(reshaped.size()) + " of another shape: " + first_few(reshaped) +
                 " (InitOptions::may_differ keeps a new head as initialised)";
    }
    if (!unexpected.empty()) {
      message += "; " + std::to_string(unexpected.size()) + " in the file only: " + first_few(unexpected) +
                 " (InitOptions::allow_unexpected skips them)";
    }
    throw UsageError(message);
  }

  torch::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
  return report;
}

}  // namespace tandem::nn
