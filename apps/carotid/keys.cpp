#include "keys.h"

#include <string>

#include "app/cam_report.h"
#include "app/carotid_task.h"
#include "app/commands.h"
#include "app/cv_keys.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "data/dataset.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/plan_command.h"
#include "tandem/train/train_keys.h"

namespace carotid {

tandem::Schema carotid_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::TrainKeys d;
  // The users' accelerate defaults: AdamW at 1e-4 for 50 epochs, picking the
  // model that best separates persons on validation.
  d.out_dir = "output";
  d.micro_batch.value = 16;
  d.epochs = 50;
  d.lr = 1e-4;
  d.weight_decay = 0.01;
  d.best_metric = "eval_person_auc";
  tandem::add_train_keys(s, d);
  tandem::declare_keys<DataKeys>(s);
  tandem::declare_keys<ImageKeys>(s);
  tandem::declare_keys<AugKeys>(s);
  tandem::declare_keys<ModelKeys>(s);
  tandem::declare_keys<CalibrateKeys>(s);
  tandem::declare_keys<CamReportKeys>(s);
  tandem::declare_keys<LossKeys>(s);
  tandem::declare_keys<CommandKeys>(s);
  tandem::declare_keys<CvKeys>(s);
  tandem::add_plan_keys(s);
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
  s.alias("--cam", "cmd.cam");
  return s;
}

}  // namespace carotid
