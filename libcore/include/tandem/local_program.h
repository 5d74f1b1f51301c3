#pragma once
// The frame of a program that runs as one process, without MPI (tandem-plot,
// apps/rouge): the body's bad input ends it with status 2, a fault with 1,
// each with its message on stderr. MPI programs use program.h instead.
#include <functional>

namespace tandem {

int run_local_program(const std::function<int()>& body);

}  // namespace tandem
