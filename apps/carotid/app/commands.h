#pragma once
// apps/carotid's subcommands, and the keys they alone read; each returns the
// exit status.
#include <string>

#include "tandem/config/settings.h"

namespace tandem {
class World;
}  // namespace tandem

namespace carotid {

// The cmd.* keys: each command's own inputs, each declared once
// (tandem/config/settings.h).
struct CommandKeys {
  std::string run_dir, model;
  bool tta = false, cam = false;
  std::string input, labels, out;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("cmd.run_dir", k.run_dir,
          "train, cv: the run directory to create or continue (after a preemption); empty: "
          "train.out_dir/train_YYYYMMDD_HHMMSS (cv_... for cv)",
          any());
    visit("cmd.model", k.model,
          "predict: the model file (a run's models/best_model.h5), or a cv folder: its folds' models, averaged", any());
    visit("cmd.tta", k.tta, "predict: average each image's probabilities with those of its horizontal mirror", any());
    visit("cmd.input", k.input, "predict: a folder of person folders or images, or one image", any());
    visit("cmd.labels", k.labels, "predict: a label sheet, to score the predictions", any());
    visit("cmd.cam", k.cam,
          "predict: Grad-CAM maps of each image's predicted class in OUT/cam (an overlay per image, a contact sheet "
          "per person, maps.h5); the folder must not exist yet",
          any());
    visit("cmd.out", k.out, "predict: output folder; empty: RUN/predictions/ for a model at RUN/models/", any());
  }
};

// Split, train with per-epoch validation, then the test report with the best model.
int run_train(tandem::World& world, tandem::Config config);
// Person-level K-fold cross-validation: a train run per fold in CV/fold-k,
// then the gathered report (run_cv_report) once every fold is done.
int run_cv(tandem::World& world, const tandem::Config& config);
// The report of a cross-validation folder (cmd.run_dir) whose folds are done.
int run_cv_report(tandem::World& world, const tandem::Config& config);
// Probabilities per image and per person for new images, scored when labels are given.
int run_predict(tandem::World& world, const tandem::Config& config);
// The memory plan of the job before it runs (tandem/train/plan_command.h).
int run_plan(tandem::World& world, const tandem::Config& config);

}  // namespace carotid
