#pragma once
// Every key and flag of apps/carotid. The flags are the ones its users typed
// for `accelerate launch train.py` (--root-dir, --label-excel, --batch-size,
// ...), kept as sugar for keys so a job file and a command line mix freely.
namespace tandem {
class Schema;
}  // namespace tandem

namespace carotid {

tandem::Schema carotid_schema();

}  // namespace carotid
