#include "metrics/ensemble.h"

#include <torch/torch.h>

#include <stdexcept>

namespace carotid {

tandem::EvalRows mean_of_models(const std::vector<tandem::EvalRows>& models) {
  if (models.empty()) throw std::invalid_argument("mean_of_models: no models");
  tandem::EvalRows mean = models.front();
  if (models.size() == 1) return mean;
  at::Tensor sum = mean.at("prob").to(at::kDouble);
  for (size_t m = 1; m < models.size(); ++m) {
    // A model whose rows came in another order would be averaged into the
    // wrong images without a word.
    if (!models[m].at("sample").equal(mean.at("sample")) || models[m].at("prob").sizes() != sum.sizes())
      throw std::invalid_argument("mean_of_models: model " + std::to_string(m) +
                                  "'s rows are not of the same samples and classes as model 0's");
    sum = sum + models[m].at("prob").to(at::kDouble);
  }
  const at::Tensor prob = (sum / static_cast<double>(models.size())).to(mean.at("prob").scalar_type());
  const at::Tensor picked = prob.gather(1, mean.at("label").to(at::kLong).unsqueeze(1)).squeeze(1);
  mean["prob"] = prob;
  mean["loss"] = -picked.to(at::kDouble).clamp_min(1e-12).log().to(mean.at("loss").scalar_type());
  mean["pred"] = prob.argmax(1);
  // Each model's probabilities are at its own temperature: no logit is the mean's.
  mean.erase("logit");
  return mean;
}

}  // namespace carotid
