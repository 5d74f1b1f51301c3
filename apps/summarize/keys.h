#pragma once
// Every key and flag of apps/summarize, and the settings read back from them.
#include <string>

namespace tandem {
class Config;
class Schema;
}  // namespace tandem

namespace summarize {

tandem::Schema summarize_schema();

// With no data given the run is the built-in demo, whose defaults differ from
// the competition's (a tiny model, a few hundred steps on a CPU). Keys the
// user set stay as set; returns a line describing what changed.
std::string apply_demo_defaults(tandem::Config& config);

}  // namespace summarize
