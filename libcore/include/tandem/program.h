#pragma once
// The frame every tandem program runs in: MPI up before anything else, then
// the program's body; bad input ends it with status 2, a fault with 1.
#include <functional>

namespace tandem {

class World;

// A rank that fails does not return through MPI_Finalize: that would wait for
// peers that may be blocked in a collective. It exits at once instead, and the
// launcher (mpirun, srun) ends the other ranks and reports this rank's status.
int run_program(int argc, char** argv, const std::function<int(World&, int, char**)>& body);

}  // namespace tandem
