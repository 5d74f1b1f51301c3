#pragma once
// The environment report: versions, each rank's place, GPUs, variables.
namespace tandem {
class World;
struct Placement;
}  // namespace tandem

namespace envcheck {

void print_report(tandem::World& world, const tandem::Placement& placement);

}  // namespace envcheck
