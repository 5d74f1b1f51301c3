#pragma once
// metrics.jsonl read back as one series per numeric field: what plots and run
// comparisons need, whatever fields an app chose to log.
#include <map>
#include <string>
#include <vector>

namespace tandem {

struct MetricPoint {
  double step, value;
};

// Field name -> points in step order; "step" itself is the x of every point.
using MetricSeries = std::map<std::string, std::vector<MetricPoint>>;

// Rows without a numeric "step", and fields that are null (a NaN loss), text
// or flags, give no points. A step that does not advance a field (a resumed
// run logging again from its checkpoint) replaces that field's points from
// there on. A last line without its newline that does not parse is a row still
// being written, and is left out. Throws UsageError when the file is missing
// or a line is not a JSON object, naming the file and line.
MetricSeries read_metric_series(const std::string& path);

}  // namespace tandem
