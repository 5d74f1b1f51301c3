#include "keys.h"

#include <string>

#include "app/cv_keys.h"
#include "app/image_settings.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/train_keys.h"

namespace carotid {

namespace {

void add_data_keys(tandem::Schema& s) {
  s.add("data.root", std::string(""), "folder with one sub-folder of images per person");
  s.add("data.label_file", std::string(""), "label sheet: .xlsx (or .csv) with a person and a label column");
  s.add("data.label_sheet", std::string(""), ".xlsx sheet to read; empty: the first");
  s.add("data.id_column", std::string(""), "header of the person column; empty: the first column");
  s.add("data.label_column", std::string(""), "header of the label column; empty: the first other column");
  s.add("data.channels", int64_t{3}, "image channels the model sees: 1 (gray) or 3 (RGB)");
  s.add("data.image_size", int64_t{224}, "images are resized to this many pixels square");
  s.add("data.max_imgs_per_person", int64_t{1000},
        "at most this many images per person, a seeded random subset; 0: all");
  s.add("data.train_ratio", 0.7, "share of each class's persons for training");
  s.add("data.val_ratio", 0.15, "share of each class's persons for validation");
  s.add("data.test_ratio", 0.15, "share of each class's persons for the final test");
  s.add("data.seed", int64_t{-1},
        "seed of the person split, the cross-validation folds and the per-person image subsets; -1: train.seed. "
        "Set it to keep the same persons in each part while train.seed changes the weights and batches");
  s.add("data.strict", false, "stop at the first unreadable image instead of skipping it");
  s.add("data.cache", true,
        "decode every image once, at image_size, into an HDF5 cache kept in memory, so epochs do "
        "no decoding (skipped when larger than data.cache_max_gb)");
  s.add("data.cache_dir", std::string(""), "where image caches are kept; empty: ~/.cache/tandem/carotid");
  s.add("data.cache_max_gb", 8.0, "largest image cache held in memory per rank, GB");
  s.add("data.num_workers", int64_t{0}, "threads per rank decoding images; 0: the rank's compute threads");
}

void add_model_keys(tandem::Schema& s) {
  s.add("model.depth", int64_t{18}, "ResNet depth: 18 or 34");
  s.add("model.stem", std::string("auto"),
        "first layers: imagenet (7x7 stride-2 conv and max-pool, for 224 pixels), small (3x3 "
        "stride-1 conv, no pool, for 28-64 pixels); auto: small below 96 pixels",
        {"auto", "imagenet", "small"});
  s.add("model.dropout", 0.0, "dropout before the classifier");
  s.add("model.channels_last", true,
        "convolutions on channels-last (NHWC) tensors: faster on CPUs (oneDNN) and on GPUs under fp16/bf16; "
        "the same values either way");
  s.add("model.init_from", std::string(""),
        "\"safetensors:FILE\": start from torchvision-named weights (the classifier is kept "
        "when its shape matches); empty: random");
  s.add("model.load", std::string(""),
        "a models/*.h5 of an earlier run to continue from; that run's split.csv is reused so no "
        "test person reaches training");
  s.add("model.classes", std::vector<std::string>{},
        "class names in label order; set by train from the label sheet, kept in the model file "
        "so predict names its columns");
  s.add("model.threshold", std::string("youden"),
        "two classes: the decision threshold on P(class 1), chosen on the validation persons after training and "
        "kept in best_model.h5: youden (max sensitivity + specificity - 1), sensitivity=S, or a number");
  s.add("train.label_smoothing", 0.0,
        "training targets (1 - e) one-hot + e / classes, as torch's cross_entropy(label_smoothing=e)");
  s.add("train.class_weights", std::string("none"),
        "weigh the loss by class: balanced = n_samples / (n_classes x class count), as scikit-learn",
        {"none", "balanced"});
}

void add_command_keys(tandem::Schema& s) {
  s.add("cmd.run_dir", std::string(""),
        "train, cv: the run directory to create or continue (after a preemption); empty: "
        "train.out_dir/train_YYYYMMDD_HHMMSS (cv_... for cv)");
  s.add("cmd.model", std::string(""),
        "predict: the model file (a run's models/best_model.h5), or a cv folder: its folds' models, averaged");
  s.add("cmd.tta", false, "predict: average each image's probabilities with those of its horizontal mirror");
  s.add("cmd.input", std::string(""), "predict: a folder of person folders or images, or one image");
  s.add("cmd.labels", std::string(""), "predict: a label sheet, to score the predictions");
  s.add("cmd.out", std::string(""), "predict: output folder; empty: RUN/predictions/ for a model at RUN/models/");
  tandem::declare_keys<CvKeys>(s);
}

}  // namespace

tandem::Schema carotid_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::TrainSettings d;
  // The users' accelerate defaults: AdamW at 1e-4 for 50 epochs, picking the
  // model that best separates persons on validation.
  d.out_dir = "output";
  d.micro_batch.value = 16;
  d.epochs = 50;
  d.lr = 1e-4;
  d.weight_decay = 0.01;
  d.best_metric = "eval_person_auc";
  d.best_mode = "max";
  tandem::add_train_keys(s, d);
  add_data_keys(s);
  tandem::declare_keys<AugKeys>(s);
  add_model_keys(s);
  add_command_keys(s);
  s.alias("--root-dir", "data.root");
  s.alias("--label-excel", "data.label_file");
  s.alias("--batch-size", "train.micro_batch");
  s.alias("--epochs", "train.epochs");
  s.alias("--lr", "train.lr");
  s.alias("--weight-decay", "train.weight_decay");
  s.alias("--seed", "train.seed");
  s.alias("--precision", "train.precision");
  s.alias("--max-imgs-per-person", "data.max_imgs_per_person");
  s.alias("--train-ratio", "data.train_ratio");
  s.alias("--val-ratio", "data.val_ratio");
  s.alias("--test-ratio", "data.test_ratio");
  s.alias("--image-size", "data.image_size");
  s.alias("--num-workers", "data.num_workers");
  s.alias("--folds", "cv.folds");
  s.alias("--fold", "cv.fold");
  s.alias("--models-per-fold", "cv.models_per_fold");
  s.alias("--output-dir", "train.out_dir");
  s.alias("--load-model", "model.load");
  s.alias("--run-dir", "cmd.run_dir");
  s.alias("--model", "cmd.model");
  s.alias("--input", "cmd.input");
  s.alias("--labels", "cmd.labels");
  s.alias("--out", "cmd.out");
  s.alias("--tta", "cmd.tta");
  return s;
}

}  // namespace carotid
