#pragma once
// metrics.jsonl: one JSON object per line, one line per optimizer step, so a
// run can be plotted or compared while it is still going, and a resumed run
// appends instead of starting over.
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tandem {

class MetricsWriter {
 public:
  using Field = std::variant<int64_t, double, std::string>;
  using Row = std::vector<std::pair<std::string, Field>>;

  // Appends to `path`, creating it and its directory if needed.
  explicit MetricsWriter(const std::string& path);
  // Fields in the given order. JSON has no NaN or infinity: such values are
  // written as null, which every JSON reader accepts.
  void write(const Row& row);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace tandem
