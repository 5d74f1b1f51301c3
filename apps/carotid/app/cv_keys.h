#pragma once
// The cv.* keys of `apps/carotid cv`, each declared once
// (tandem/config/settings.h). Relations between them (cv.fold below
// cv.folds, no more image sizes than models) are checked where the cv is
// planned (cv_command.cpp).
#include <cstdint>
#include <vector>

#include "tandem/config/settings.h"

namespace carotid {

struct CvKeys {
  int64_t folds = 5;
  int64_t fold = -1;
  int64_t models_per_fold = 1;
  std::vector<int64_t> image_sizes;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("cv.folds", k.folds, "cv: person-level folds, each tested once by a model trained on the others",
          tandem::at_least(2));
    visit("cv.fold", k.fold,
          "cv: run only this fold (0-based; one job of a Slurm array, with --run-dir); -1: every fold not done",
          tandem::at_least(-1));
    visit("cv.models_per_fold", k.models_per_fold,
          "cv: models trained per fold, model m with train.seed + m on the same persons, their probabilities "
          "averaged (in CV/fold-k/model-m); 1: the fold's own folder is its one run",
          tandem::at_least(1));
    visit("cv.image_sizes", k.image_sizes,
          "cv: model m of each fold sees the images at the (m mod n)-th of these n sizes instead of "
          "data.image_size, so a fold's mean is of models that saw other scales (n <= cv.models_per_fold); "
          "empty: data.image_size for every model",
          tandem::in_range(16, 4096));
  }
};

}  // namespace carotid
