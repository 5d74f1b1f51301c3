#pragma once
// The frame every tandem program runs in: MPI up before anything else, then
// the program's body; bad input ends it with status 2, a fault with 1.
#include <exception>
#include <functional>

namespace tandem {

class World;

// A rank that fails does not return through MPI_Finalize: that would wait for
// peers that may be blocked in a collective. It exits at once instead, and the
// launcher (mpirun, srun) ends the other ranks and reports this rank's status.
int run_program(int argc, char** argv, const std::function<int(World&, int, char**)>& body);

// Prints `e` as run_program will, once: code that owns a communicator calls
// it in a catch before rethrowing, so the error reaches the user before the
// communicator's teardown and the other destructors the unwinding runs (a
// rank out of GPU memory whose peers have collectives in flight would
// otherwise wait for them, and they for it, until the watchdog speaks of a
// dead rank, and the real error never shows). run_program then only exits.
void report_error(const World& world, const std::exception& e);

}  // namespace tandem
