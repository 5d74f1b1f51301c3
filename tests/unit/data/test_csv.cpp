#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "../test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::CsvOptions;
using tandem::CsvTable;
using tandem::UsageError;
using Rows = std::vector<std::vector<std::string>>;

using tandem::testing::usage_error_of;

class CsvTest : public tandem::testing::TempDirTest {
 protected:
  // Writes `bytes` as they are to a file in the test's directory; returns its path.
  std::string file(const std::string& bytes, const std::string& name = "train.csv") {
    const std::string at = path(name);
    std::ofstream(at, std::ios::binary) << bytes;
    return at;
  }

  CsvTable read(const std::string& bytes, const CsvOptions& options = {}) {
    return tandem::read_csv(file(bytes), options);
  }

  std::string error(const std::string& bytes, const CsvOptions& options = {}) {
    const std::string at = file(bytes);
    return usage_error_of([&] { tandem::read_csv(at, options); });
  }

  std::string slurp(const std::string& at) {
    std::ifstream in(at, std::ios::binary);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

  std::string train() const { return path("train.csv"); }
};

TEST_F(CsvTest, ReadsQuotedCommasQuotesAndNewlines) {
  const CsvTable table = read(
      "id,dialogue,summary\n"
      "1,\"Amanda: hi, Tom\nTom: \"\"hey\"\"\",Amanda greets Tom.\n"
      "2,plain,\"quoted, with comma\"\n");
  EXPECT_EQ(table.path, train());
  EXPECT_EQ(table.header, (std::vector<std::string>{"id", "dialogue", "summary"}));
  EXPECT_EQ(table.rows,
            (Rows{{"1", "Amanda: hi, Tom\nTom: \"hey\"", "Amanda greets Tom."}, {"2", "plain", "quoted, with comma"}}));
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(table.skipped, 0);
}

TEST_F(CsvTest, KeepsLineEndsInsideQuotesAsTheyAre) {
  const CsvTable table = read("a,b\n\"x\r\ny\",\"p\rq\nr\"\n5,6\n");
  EXPECT_EQ(table.rows, (Rows{{"x\r\ny", "p\rq\nr"}, {"5", "6"}}));
  // CRLF is one line, lone CR and LF one each.
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 6}));
}

TEST_F(CsvTest, ReadsCrLfFiles) {
  const CsvTable table = read("id,text\r\n1,one\r\n2,\"two\r\nlines\"\r\n3,three\r\n");
  EXPECT_EQ(table.header, (std::vector<std::string>{"id", "text"}));
  EXPECT_EQ(table.rows, (Rows{{"1", "one"}, {"2", "two\r\nlines"}, {"3", "three"}}));
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 3, 5}));
}

TEST_F(CsvTest, TreatsALoneCrAsALineEnd) { EXPECT_EQ(read("a,b\r1,2\r3,4").rows, (Rows{{"1", "2"}, {"3", "4"}})); }

TEST_F(CsvTest, StripsTheByteOrderMark) {
  const CsvTable table = read("\xEF\xBB\xBFid,caf\xC3\xA9\n1,\xE2\x82\xAC\n");
  EXPECT_EQ(table.header, (std::vector<std::string>{"id", "caf\xC3\xA9"}));
  EXPECT_EQ(table.column("id"), 0u);
  EXPECT_EQ(table.rows, (Rows{{"1", "\xE2\x82\xAC"}}));
}

TEST_F(CsvTest, TheLastLineEndIsOptional) {
  const Rows expected = {{"1", "2"}, {"3", "4"}};
  EXPECT_EQ(read("a,b\n1,2\n3,4").rows, expected);
  EXPECT_EQ(read("a,b\n1,2\n3,4\n").rows, expected);
  EXPECT_EQ(read("a,b\r\n1,2\r\n3,4").rows, expected);
  EXPECT_EQ(read("a,b\n1,2\n3,\"4\"").rows, expected);
}

TEST_F(CsvTest, ReadsEmptyFields) {
  const CsvTable table = read("a,b,c\n,,\n\"\",x,\n,\"\",\"\"\n");
  EXPECT_EQ(table.rows, (Rows{{"", "", ""}, {"", "x", ""}, {"", "", ""}}));
  EXPECT_EQ(read("a,b,c\n1,2,").rows, (Rows{{"1", "2", ""}}));
}

TEST_F(CsvTest, KeepsSpacesAroundFields) { EXPECT_EQ(read("a,b\n  x , y\t\n").rows, (Rows{{"  x ", " y\t"}})); }

TEST_F(CsvTest, SkipsBlankLinesBetweenRows) {
  const CsvTable table = read("\n\na,b\n\n1,2\r\n\r\n3,4\n\n\n");
  EXPECT_EQ(table.rows, (Rows{{"1", "2"}, {"3", "4"}}));
  EXPECT_EQ(table.lines, (std::vector<int64_t>{5, 7}));
}

TEST_F(CsvTest, AQuotedEmptyFieldIsARowNotABlankLine) {
  const CsvTable table = read("label\nx\n\"\"\ny\n");
  EXPECT_EQ(table.rows, (Rows{{"x"}, {""}, {"y"}}));
}

TEST_F(CsvTest, UsesAnotherDelimiter) {
  CsvOptions options;
  options.delimiter = ';';
  EXPECT_EQ(read("a;b\n1,5;\"x;y\"\n", options).rows, (Rows{{"1,5", "x;y"}}));
  options.delimiter = '\t';
  EXPECT_EQ(read("a\tb\n1\t2\n", options).rows, (Rows{{"1", "2"}}));
  options.delimiter = '"';
  EXPECT_THROW(read("a\n", options), std::invalid_argument);
}

TEST_F(CsvTest, FindsColumnsOrSaysWhichThereAre) {
  const CsvTable table = read("id,dialogue,summary\n");
  EXPECT_EQ(table.column("summary"), 2u);
  EXPECT_TRUE(table.rows.empty());
  EXPECT_EQ(usage_error_of([&] { table.column("dialog", "data.text_column"); }),
            train() + ": no column 'dialog' (columns: id, dialogue, summary); set data.text_column");
  EXPECT_EQ(usage_error_of([&] { table.column("Summary"); }),
            train() + ": no column 'Summary' (columns: id, dialogue, summary)");
}

TEST_F(CsvTest, MissingFile) {
  EXPECT_EQ(usage_error_of([&] { tandem::read_csv(path("nope.csv")); }), path("nope.csv") + ": no such file");
  EXPECT_EQ(usage_error_of([&] { tandem::read_csv(dir_.string()); }),
            dir_.string() + ": is a directory, expected a CSV file");
}

TEST_F(CsvTest, EmptyFile) {
  const std::string expected = train() + ": empty file, expected a header row";
  EXPECT_EQ(error(""), expected);
  EXPECT_EQ(error("\xEF\xBB\xBF"), expected);
  EXPECT_EQ(error("\r\n\n"), expected);
}

TEST_F(CsvTest, WrongFieldCount) {
  EXPECT_EQ(error("id,dialogue,summary\n1,\"a\nb\",c\n" + std::string(50, '\n') + "2,x\n"),
            train() + ":54: 2 fields, expected 3 (id,dialogue,summary)");
  EXPECT_EQ(error("id,dialogue,summary\n1,a,b,c\n"), train() + ":2: 4 fields, expected 3 (id,dialogue,summary)");
  EXPECT_EQ(error("id,dialogue\n1\n"), train() + ":2: 1 field, expected 2 (id,dialogue)");
}

TEST_F(CsvTest, UnterminatedQuoteNamesTheLineItStarted) {
  EXPECT_EQ(error("id,text\n1,ok\n2,\"never\nclosed\n3,more\n"),
            train() + ":3: quoted field never closed (started here)");
  EXPECT_EQ(error("id,\"text\n"), train() + ":1: quoted field never closed (started here)");
}

TEST_F(CsvTest, StrayQuotes) {
  EXPECT_EQ(error("id,text\n1,ok\n2,say \"hi\"\n"),
            train() +
                ":3: stray quote in an unquoted field; quote the whole field and double the quotes inside "
                "(\"say \"\"hi\"\"\")");
  EXPECT_EQ(error("id,text\n1,\"a\nb\"c\n"),
            train() +
                ":3: text after the closing quote of a quoted field; a quote inside a quoted field is "
                "written twice (\"say \"\"hi\"\"\")");
  EXPECT_EQ(error("id,te\"xt\n"),
            train() +
                ":1: stray quote in an unquoted field; quote the whole field and double the quotes inside "
                "(\"say \"\"hi\"\"\") (in the header)");
}

TEST_F(CsvTest, InvalidUtf8NamesLineAndByteOffset) {
  const std::string hint = "; save the file as UTF-8 (it may be Latin-1 or Windows-1252)";
  // Latin-1 "café" in a quoted field that spans lines.
  EXPECT_EQ(error("id,text\n1,\"ok\ncaf\xE9\"\n"), train() + ":3: invalid UTF-8 at byte offset 17 (0xE9)" + hint);
  EXPECT_EQ(error("id,text\n1,caf\xE9\n"), train() + ":2: invalid UTF-8 at byte offset 13 (0xE9)" + hint);
  // The offset counts the BOM: it is the file's own.
  EXPECT_EQ(error("\xEF\xBB\xBFid\n\x80\n"), train() + ":2: invalid UTF-8 at byte offset 6 (0x80)" + hint);
  EXPECT_EQ(error("id\n\xC0\xAF\n"), train() + ":2: invalid UTF-8 at byte offset 3 (0xC0)" + hint);      // overlong
  EXPECT_EQ(error("id\n\xED\xA0\x80\n"), train() + ":2: invalid UTF-8 at byte offset 3 (0xED)" + hint);  // surrogate
  EXPECT_EQ(error("id\n\xF4\x90\x80\x80\n"), train() + ":2: invalid UTF-8 at byte offset 3 (0xF4)" + hint);
  EXPECT_EQ(error("id\nab\xE2\x82"), train() + ":2: invalid UTF-8 at byte offset 5 (0xE2)" + hint);  // cut short
  EXPECT_EQ(error(std::string("\xFF\xFEi\0d\0", 6)),
            train() + ": file is UTF-16; save it as UTF-8 (\"CSV UTF-8\" in Excel)");
  EXPECT_EQ(read("t\n\xF0\x9F\x98\x80\n").rows, (Rows{{"\xF0\x9F\x98\x80"}}));
}

TEST_F(CsvTest, DuplicateColumnNames) {
  EXPECT_EQ(error("id,text,label,text\n"), train() + ":1: column 'text' appears twice in the header (columns 2 and 4)");
}

TEST_F(CsvTest, SkipBadRowsCountsThem) {
  CsvOptions options;
  options.skip_bad_rows = true;
  const CsvTable table = read(
      "id,text\n"
      "1,one\n"
      "2\n"
      "3,three,extra\n"
      "4,say \"hi\"\n"
      "5,\"a\"b\n"
      "6,six\n",
      options);
  EXPECT_EQ(table.rows, (Rows{{"1", "one"}, {"6", "six"}}));
  EXPECT_EQ(table.lines, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(table.skipped, 4);
  EXPECT_EQ(table.first_skipped, train() + ":3: 1 field, expected 2 (id,text)");
}

TEST_F(CsvTest, SkipBadRowsStillStopsAtErrorsThatLoseRows) {
  CsvOptions options;
  options.skip_bad_rows = true;
  EXPECT_EQ(error("id,text\n1,\"open\n2,x\n", options), train() + ":2: quoted field never closed (started here)");
  EXPECT_EQ(error("id,text\n1,\xFF\n", options).rfind(train() + ":2: invalid UTF-8", 0), 0u);
  EXPECT_EQ(error("id,id\n", options), train() + ":1: column 'id' appears twice in the header (columns 1 and 2)");
}

TEST_F(CsvTest, RoundTripsTrickyFields) {
  const std::vector<std::string> header = {"id", "text, with comma", "\"quoted\""};
  const Rows rows = {
      {"1", "a,b", "say \"hi\""},
      {"2", "line\nbreak", "crlf\r\ninside"},
      {"3", "lone\rcr", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80"},
      {"", "", ""},
      {"  leading", "trailing  ", "\ttab"},
      {"\"", "\"\"", ","},
      {"5", "\n", "plain"},
  };
  tandem::write_csv(path("out.csv"), header, rows);
  const CsvTable table = tandem::read_csv(path("out.csv"));
  EXPECT_EQ(table.header, header);
  EXPECT_EQ(table.rows, rows);
}

TEST_F(CsvTest, WritesQuotesOnlyWhereNeeded) {
  tandem::write_csv(path("submission.csv"), {"id", "summary"},
                    {{"1", "plain text"}, {"2", "a, b"}, {"3", "say \"hi\""}, {"4", " x"}, {"5", ""}});
  EXPECT_EQ(slurp(path("submission.csv")),
            "id,summary\n1,plain text\n2,\"a, b\"\n3,\"say \"\"hi\"\"\"\n4,\" x\"\n5,\n");
}

TEST_F(CsvTest, WritesAnEmptyOnlyFieldQuoted) {
  tandem::write_csv(path("one.csv"), {"label"}, {{"x"}, {""}, {"y"}});
  EXPECT_EQ(slurp(path("one.csv")), "label\nx\n\"\"\ny\n");
  EXPECT_EQ(tandem::read_csv(path("one.csv")).rows, (Rows{{"x"}, {""}, {"y"}}));
}

// Found by fuzz_csv: a header whose first name starts with U+FEFF (the file's
// own BOM came after blank lines) lost it on the way back.
TEST_F(CsvTest, WritesALeadingByteOrderMarkQuotedSoItSurvives) {
  tandem::write_csv(path("bom.csv"), {"\xEF\xBB\xBFid", "x"}, {{"\xEF\xBB\xBF" "1", "2"}});
  EXPECT_EQ(slurp(path("bom.csv")), "\"\xEF\xBB\xBFid\",x\n\xEF\xBB\xBF" "1,2\n");
  const tandem::CsvTable table = tandem::read_csv(path("bom.csv"));
  EXPECT_EQ(table.header, (std::vector<std::string>{"\xEF\xBB\xBFid", "x"}));
  EXPECT_EQ(table.rows, (Rows{{"\xEF\xBB\xBF" "1", "2"}}));
}

TEST_F(CsvTest, WriteReplacesTheFileAndLeavesNoTemporary) {
  file("old contents\n", "submission.csv");
  tandem::write_csv(path("submission.csv"), {"id"}, {{"1"}});
  EXPECT_EQ(slurp(path("submission.csv")), "id\n1\n");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"submission.csv"});
}

TEST_F(CsvTest, WriteRejectsRaggedRowsAndLeavesTheOldFile) {
  file("old\n", "submission.csv");
  EXPECT_THROW(tandem::write_csv(path("submission.csv"), {"id", "summary"}, {{"1", "x"}, {"2"}}),
               std::invalid_argument);
  EXPECT_THROW(tandem::write_csv(path("submission.csv"), {}, {}), std::invalid_argument);
  EXPECT_EQ(slurp(path("submission.csv")), "old\n");
}

TEST_F(CsvTest, WriteIntoAMissingDirectoryNamesTheFile) {
  const std::string at = path("no/such/dir/submission.csv");
  const std::string message =
      tandem::testing::message_of<std::runtime_error>([&] { tandem::write_csv(at, {"id"}, {{"1"}}); });
  EXPECT_NE(message.find("submission.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST_F(CsvTest, ParsesTwentyThousandRows) {
  constexpr int kRows = 20000;
  std::string bytes = "id,dialogue,summary\r\n";
  for (int i = 0; i < kRows; ++i) {
    const std::string n = std::to_string(i);
    bytes +=
        n + ",\"#Person1#: row " + n + ", \"\"quoted\"\"\r\n#Person2#: ok\"," + (i % 3 ? "short " + n : "") + "\r\n";
  }
  const CsvTable table = read(bytes);
  ASSERT_EQ(table.rows.size(), static_cast<size_t>(kRows));
  for (int i = 0; i < kRows; i += 997) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(table.rows[i], (std::vector<std::string>{n, "#Person1#: row " + n + ", \"quoted\"\r\n#Person2#: ok",
                                                       i % 3 ? "short " + n : ""}));
    EXPECT_EQ(table.lines[i], 2 + 2 * i);
  }
  EXPECT_EQ(table.rows.back()[0], std::to_string(kRows - 1));
}

}  // namespace
