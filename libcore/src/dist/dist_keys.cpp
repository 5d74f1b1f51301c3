#include "tandem/dist/dist_keys.h"

#include "tandem/config/config.h"
#include "tandem/config/schema.h"

namespace tandem {

void add_dist_keys(Schema& schema) { declare_keys<DistSettings>(schema); }

DistSettings dist_settings(const Config& config) { return read_keys<DistSettings>(config); }

}  // namespace tandem
