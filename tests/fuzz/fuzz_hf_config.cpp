// Hugging Face's config.json for GPT-2 (summarize's model/gpt2_hf.h): any
// bytes make an architecture or a UsageError naming the file.
#include <filesystem>

#include "fuzz_input.h"
#include "model/gpt2_hf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const std::string path = fuzz::write_input(data, size, "config.json");
  fuzz::expect_clean([&] { summarize::read_hf_config(std::filesystem::path(path).parent_path().string()); });
  return 0;
}
