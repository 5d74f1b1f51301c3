#include "tandem/io/checkpoint.h"

#include <torch/torch.h>

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/h5file.h"
#include "h5_guard.h"
#include "tandem/text/message_text.h"

namespace tandem {
namespace {

void check_name(const std::string& name, const std::string& what, const std::string& path) {
  if (name.empty() || name.find('/') != std::string::npos) {
    throw std::invalid_argument(path + ": " + what + " name '" + name + "' must be non-empty and free of '/'");
  }
}

void write_checkpoint(const std::string& path, const TensorSets& sets, const CheckpointState& state) {
  H5File file(path, H5File::Mode::kCreate);
  for (const auto& [set, tensors] : sets) {
    check_name(set, "tensor set", path);
    file.create_group(set);
    for (const auto& [name, tensor] : tensors) {
      check_name(name, "tensor", path);
      file.write(set + "/" + name, tensor);
    }
  }
  for (const auto& [key, value] : state) file.set_attr("", key, value);
  file.close();
}

template <class T>
T state_as(const Checkpoint& checkpoint, const std::string& key, const char* wanted) {
  const auto it = checkpoint.state.find(key);
  if (it == checkpoint.state.end()) throw UsageError(checkpoint.path + ": no state '" + key + "' in the checkpoint");
  if (const auto* value = std::get_if<T>(&it->second)) return *value;
  throw UsageError(checkpoint.path + ": state '" + key + "' is not " + wanted);
}

}  // namespace

NamedTensors module_state(const torch::nn::Module& module) {
  NamedTensors out = named_tensors(module.named_parameters());
  for (auto& entry : named_tensors(module.named_buffers())) out.push_back(std::move(entry));
  return out;
}

NamedTensors trained_state(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& p : module.named_parameters())
    if (p.value().requires_grad()) out.emplace_back(p.key(), p.value());
  for (auto& entry : named_tensors(module.named_buffers())) out.push_back(std::move(entry));
  return out;
}

void require_frozen_base(const Checkpoint& checkpoint, const std::string& frozen_base) {
  const auto it = checkpoint.state.find("frozen_base");
  const std::string theirs = it != checkpoint.state.end() ? checkpoint.get_string("frozen_base") : "";
  if (theirs == frozen_base) return;
  const std::string& path = checkpoint.path;
  if (theirs.empty())
    throw UsageError(path + ": holds a whole model, not one trained on a frozen base (" + frozen_base +
                     "): use it with the settings it was written with");
  if (frozen_base.empty())
    throw UsageError(path + ": holds what was trained on a frozen base (" + theirs +
                     "), not a whole model: use it with the settings it was written with");
  throw UsageError(path + ": was trained on the frozen base " + theirs + ", and this run's is " + frozen_base +
                   ": give it the base it was trained on");
}

void save_checkpoint(const std::string& path, const TensorSets& sets, const CheckpointState& state) {
  replace_atomically(path, [&](const std::string& temp) { write_checkpoint(temp, sets, state); });
}

Checkpoint load_checkpoint(const std::string& path) {
  Checkpoint checkpoint;
  checkpoint.path = path;
  const H5File file(path);
  for (const std::string& set : file.list()) {
    NamedTensors& tensors = checkpoint.sets[set];
    for (const std::string& name : file.list(set)) tensors.emplace_back(name, file.read(set + "/" + name));
  }
  for (const std::string& key : file.attr_names("")) checkpoint.state[key] = file.attr("", key);
  return checkpoint;
}

namespace {

// A set of an open checkpoint file.
class FileSource : public TensorSource {
 public:
  FileSource(std::shared_ptr<const H5File> file, std::string set) : file_(std::move(file)), set_(std::move(set)) {}
  std::vector<std::string> names() const override { return file_->list(set_); }
  std::vector<int64_t> shape(const std::string& name) const override { return file_->shape(path(name)); }
  at::Tensor read(const std::string& name) const override { return file_->read(path(name)); }
  at::Tensor read_rows(const std::string& name, int64_t begin, int64_t end) const override {
    return file_->read_rows(path(name), begin, end);
  }

 private:
  std::string path(const std::string& name) const { return set_ + "/" + name; }
  std::shared_ptr<const H5File> file_;
  std::string set_;
};

}  // namespace

Checkpoint open_checkpoint(const std::string& path) {
  Checkpoint checkpoint;
  checkpoint.path = path;
  auto file = std::make_shared<const H5File>(path);
  // The walk that opening starts reads every tensor, checksums included;
  // where none ran (a file this process wrote, no walker), they are read
  // here, one at a time, so that a damaged file is refused now, as
  // load_checkpoint refuses it, and not halfway through a restore.
  if (!h5::walked(path))
    for (const std::string& set : file->list())
      for (const std::string& name : file->list(set)) file->read(set + "/" + name);
  for (const std::string& key : file->attr_names("")) checkpoint.state[key] = file->attr("", key);
  checkpoint.file = std::move(file);
  return checkpoint;
}

bool Checkpoint::has_set(const std::string& name) const {
  return file ? file->has(name) : sets.count(name) > 0;
}

std::unique_ptr<TensorSource> Checkpoint::source(const std::string& name) const {
  if (!has_set(name)) throw UsageError(path + ": no tensor set '" + name + "' in the checkpoint");
  if (file) return std::make_unique<FileSource>(file, name);
  return std::make_unique<MemorySource>(sets.at(name));
}

const NamedTensors& Checkpoint::set(const std::string& name) const {
  if (file) throw std::logic_error(path + " was opened, not loaded: read its set '" + name + "' through source()");
  const auto it = sets.find(name);
  if (it == sets.end()) throw UsageError(path + ": no tensor set '" + name + "' in the checkpoint");
  return it->second;
}

int64_t Checkpoint::get_int(const std::string& key) const { return state_as<int64_t>(*this, key, "an int64"); }

double Checkpoint::get_double(const std::string& key) const {
  const auto it = state.find(key);
  if (it != state.end() && std::holds_alternative<int64_t>(it->second))
    return static_cast<double>(std::get<int64_t>(it->second));
  return state_as<double>(*this, key, "a double");
}

std::string Checkpoint::get_string(const std::string& key) const {
  return state_as<std::string>(*this, key, "a string");
}

void restore(const Checkpoint& checkpoint, const std::string& set, const NamedTensors& targets,
             const NamedTensors& read_elsewhere) {
  const std::unique_ptr<TensorSource> source = checkpoint.source(set);
  const std::vector<std::string> stored = source->names();
  std::unordered_map<std::string, std::vector<int64_t>> by_name;
  for (const std::string& name : stored) by_name.emplace(name, source->shape(name));

  std::vector<std::string> missing, reshaped, unexpected;
  std::unordered_set<std::string> targeted;
  NamedTensors checked = targets;
  checked.insert(checked.end(), read_elsewhere.begin(), read_elsewhere.end());
  for (const auto& [name, tensor] : checked) {
    targeted.insert(name);
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
    } else if (it->second != tensor.sizes().vec()) {
      reshaped.push_back(name + ": checkpoint " + shape_text(it->second) + " vs " + set + " " +
                         shape_text(tensor.sizes()));
    }
  }
  for (const std::string& name : stored) {
    if (!targeted.count(name)) unexpected.push_back(name);
  }

  if (!missing.empty() || !reshaped.empty() || !unexpected.empty()) {
    std::string message = checkpoint.path + ": tensor set '" + set + "' does not match";
    if (!missing.empty())
      message += "; " + std::to_string(missing.size()) + " missing from the checkpoint: " + first_few(missing);
    if (!unexpected.empty()) {
      message += "; " + std::to_string(unexpected.size()) + " in the checkpoint only: " + first_few(unexpected);
    }
    if (!reshaped.empty())
      message += "; " + std::to_string(reshaped.size()) + " of another shape: " + first_few(reshaped);
    throw UsageError(message);
  }

  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : targets) tensor.copy_(source->read(name));
}

}  // namespace tandem
