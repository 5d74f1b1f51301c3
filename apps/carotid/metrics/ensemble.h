#pragma once
// Several classifiers judged as one: each image's class probabilities are
// the mean of the models' (soft voting, as scikit-learn's VotingClassifier
// does), so an ensemble is scored, thresholded and reported like one model.
// predict's several model files and a cross-validation fold of several
// models both go through it.
#include <vector>

#include "tandem/train/task.h"

namespace carotid {

// Rows of the same images in the same order from each model ("prob",
// "label", "sample"; other keys are taken from the first) into the
// ensemble's: "prob" the mean, "loss" the cross-entropy of that mean
// (-log P(label), floored at 1e-12) and "pred" its most probable class
// ("logit" left out: each model's probabilities are at its temperature). One
// model's rows come back as they are. Throws std::invalid_argument when the
// models' rows are not of the same samples or classes.
tandem::EvalRows mean_of_models(const std::vector<tandem::EvalRows>& models);

}  // namespace carotid
