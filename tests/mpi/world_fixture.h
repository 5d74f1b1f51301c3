#pragma once
// The MPI world shared by every multi-rank test in this binary: MPI can be
// initialised once per process, so main() owns it and tests borrow it.
namespace tandem {
class World;
}
tandem::World& test_world();
