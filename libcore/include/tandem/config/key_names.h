#pragma once
// The key a user sets for a training setting: "train.lr", or "dit.lr" when
// the model's keys live in [dit] (tandem/train/train_keys.h). Messages about
// a setting name it through this, so that they name the key the user
// actually wrote, from any layer (the sampler, the schedule). Declared here
// so that those layers need not include train/; defined beside TrainKeys'
// declarations (train_keys.cpp), whose fields it names.
#include <string>

namespace tandem {

struct KeyNames {
  std::string model_table = "train";
  // The key of TrainKeys' field `field`; std::logic_error for no field.
  std::string operator()(const std::string& field) const;
};

}  // namespace tandem
