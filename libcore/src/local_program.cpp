#include "tandem/local_program.h"

#include <exception>
#include <iostream>

#include "tandem/error.h"

namespace tandem {

int run_local_program(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return kExitFailure;
  }
}

}  // namespace tandem
