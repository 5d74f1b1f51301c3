#include "data/split.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/random.h"
#include "tandem/text/message_text.h"

namespace carotid {
namespace {

using tandem::UsageError;

int64_t round_half_up(double x) { return static_cast<int64_t>(std::floor(x + 0.5 + 1e-9)); }

bool parse_count(const std::string& text, int64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 0;
}

}  // namespace

const char* part_name(Part part) {
  switch (part) {
    case Part::train:
      return "train";
    case Part::val:
      return "val";
    case Part::test:
      return "test";
    case Part::none:
      break;
  }
  return "none";
}

void check_ratios(const SplitRatios& ratios) {
  const std::string values = "data.train_ratio = " + tandem::number_text(ratios.train) +
                             ", data.val_ratio = " + tandem::number_text(ratios.val) +
                             ", data.test_ratio = " + tandem::number_text(ratios.test);
  for (double r : {ratios.train, ratios.val, ratios.test})
    if (!std::isfinite(r) || r < 0) throw UsageError("split ratios must be numbers >= 0 (" + values + ")");
  const double sum = ratios.train + ratios.val + ratios.test;
  if (std::fabs(sum - 1.0) > 1e-6)
    throw UsageError("data.train_ratio, data.val_ratio and data.test_ratio must sum to 1 (" + values + ", sum " +
                     tandem::number_text(sum) + ")");
}

std::array<int64_t, 3> split_counts(int64_t n, const SplitRatios& ratios) {
  const double nd = static_cast<double>(n);
  const int64_t train = std::clamp<int64_t>(round_half_up(nd * ratios.train), 0, n);
  const int64_t train_val = std::clamp<int64_t>(round_half_up(nd * (ratios.train + ratios.val)), train, n);
  return {train, train_val - train, n - train_val};
}

std::vector<Part> split_persons(const std::vector<Person>& persons, const SplitRatios& ratios, uint64_t seed) {
  check_ratios(ratios);
  std::map<int64_t, std::vector<size_t>> by_class;  // label -> indices into persons
  for (size_t i = 0; i < persons.size(); ++i) by_class[persons[i].label].push_back(i);
  std::vector<Part> parts(persons.size(), Part::none);
  for (auto& [label, members] : by_class) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) { return persons[a].id < persons[b].id; });
    tandem::SplitMix64 rng(tandem::mix_seed(seed, static_cast<uint64_t>(label)));
    tandem::shuffle(members, rng);
    const auto counts = split_counts(static_cast<int64_t>(members.size()), ratios);
    for (size_t k = 0; k < members.size(); ++k) {
      const int64_t at = static_cast<int64_t>(k);
      parts[members[k]] = at < counts[0] ? Part::train : at < counts[0] + counts[1] ? Part::val : Part::test;
    }
  }
  return parts;
}

void write_split_csv(const std::string& path, const std::vector<Person>& persons, const std::vector<Part>& parts) {
  if (parts.size() != persons.size()) throw std::invalid_argument("write_split_csv: one part per person expected");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < persons.size(); ++i) {
    if (parts[i] == Part::none) continue;
    rows.push_back({persons[i].id, std::to_string(persons[i].label), part_name(parts[i]),
                    std::to_string(persons[i].images.size())});
  }
  tandem::write_csv(path, {"person", "label", "split", "images"}, rows);
}

std::vector<SplitRow> read_split_csv(const std::string& path) {
  const tandem::CsvTable table = tandem::read_csv(path);
  const size_t person_col = table.column("person");
  const size_t label_col = table.column("label");
  const size_t split_col = table.column("split");
  const size_t images_col = table.column("images");
  std::vector<SplitRow> rows;
  std::unordered_map<std::string, int64_t> line_of;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const auto& fields = table.rows[r];
    SplitRow row;
    row.line = table.lines[r];
    const std::string at = path + ": line " + std::to_string(row.line) + ": ";
    row.person = fields[person_col];
    if (row.person.empty()) throw UsageError(at + "no person id");
    const auto [it, added] = line_of.emplace(row.person, row.line);
    if (!added)
      throw UsageError(at + "person " + row.person + " is listed again (first on line " + std::to_string(it->second) +
                       ")");
    if (!parse_count(fields[label_col], row.label))
      throw UsageError(at + "label '" + fields[label_col] + "' is not a whole number >= 0");
    if (!parse_count(fields[images_col], row.images))
      throw UsageError(at + "images '" + fields[images_col] + "' is not a whole number >= 0");
    const std::string& split = fields[split_col];
    if (split == "train")
      row.part = Part::train;
    else if (split == "val")
      row.part = Part::val;
    else if (split == "test")
      row.part = Part::test;
    else
      throw UsageError(at + "split '" + split + "' is not train, val or test");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Part> parts_from_split(const std::vector<SplitRow>& rows, const std::string& path,
                                   const PersonMatch& match) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < match.persons.size(); ++i) index[match.persons[i].id] = i;
  auto listed = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  std::vector<Part> parts(match.persons.size(), Part::none);
  for (const SplitRow& row : rows) {
    const std::string at = path + ": line " + std::to_string(row.line) + ": person " + row.person;
    const auto found = index.find(row.person);
    if (found == index.end()) {
      if (listed(match.without_folder, row.person)) throw UsageError(at + " has no folder of images");
      if (listed(match.without_images, row.person)) throw UsageError(at + " has no images in its folder");
      if (listed(match.without_label, row.person)) throw UsageError(at + " is no longer in the label sheet");
      throw UsageError(at + " is neither in the label sheet nor among the folders");
    }
    const Person& person = match.persons[found->second];
    if (person.label != row.label)
      throw UsageError(at + " has label " + std::to_string(row.label) + ", but the label sheet (row " +
                       std::to_string(person.row) + ") now says " + std::to_string(person.label));
    parts[found->second] = row.part;
  }
  return parts;
}

}  // namespace carotid
