// The label sheet reader, on .xlsx files written by libxlsxwriter and on .csv
// files: ids and labels in the forms people keep them, and every mistake in
// a sheet stopping the run with a message that names the row or the column.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "labels/label_sheet.h"
#include "labels/xlsx_reader.h"
#include "tandem/error.h"
#include "shared_data.h"
#include "xlsx_fixture.h"

namespace {

using carotid::LabelSheet;
using carotid::LabelSheetOptions;
using carotid::read_label_sheet;
using carotid::testing::Boolean;
using carotid::testing::Formula;
using carotid::testing::XCell;
using carotid::testing::XRows;
using carotid::testing::XSheet;
using tandem::UsageError;
using S = std::string;

using tandem::testing::usage_error_of;

class LabelSheetTest : public tandem::testing::TempDirTest {
 protected:
  std::string xlsx(const std::vector<XSheet>& sheets, bool inline_strings = false,
                   const std::string& name = "label.xlsx") {
    const std::string at = path(name);
    carotid::testing::write_xlsx(at, sheets, inline_strings);
    return at;
  }
  std::string xlsx(const XRows& rows) { return xlsx({{"labels", rows}}); }
  std::string csv(const std::string& text, const std::string& name = "label.csv") {
    const std::string at = path(name);
    std::ofstream(at, std::ios::binary) << text;
    return at;
  }
};

// ---- the workbook reader underneath ----

TEST_F(LabelSheetTest, XlsxReaderReadsSharedAndInlineStringsNumbersFormulasAndBooleans) {
  for (bool inline_strings : {false, true}) {
    SCOPED_TRACE(inline_strings ? "inline strings" : "shared strings");
    const XRows rows = {
        {S("ID"), S("Label")},
        {S("a&b <c> \"q\" é"), 1.5},
        {XCell{}, Formula{"=1+1", 2.0}},
        {Formula{"=\"x\"&\"y\"", S("xy")}, Boolean{true}},
    };
    const auto sheets = carotid::read_xlsx(xlsx({{"first", rows}, {"second", {{S("only")}}}}, inline_strings));
    ASSERT_EQ(sheets.size(), 2u);
    EXPECT_EQ(sheets[0].name, "first");
    EXPECT_EQ(sheets[1].name, "second");
    const auto& r = sheets[0].rows;
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0][0].text, "ID");
    EXPECT_EQ(r[1][0].kind, carotid::Cell::Kind::text);
    EXPECT_EQ(r[1][0].text, "a&b <c> \"q\" é");
    EXPECT_EQ(r[1][1].kind, carotid::Cell::Kind::number);
    EXPECT_EQ(r[1][1].number, 1.5);
    EXPECT_TRUE(r[2][0].empty());
    EXPECT_EQ(r[2][1].number, 2.0);  // the cached result, not the formula
    EXPECT_EQ(r[3][0].text, "xy");
    EXPECT_EQ(r[3][1].number, 1.0);
    EXPECT_EQ(sheets[1].rows[0][0].text, "only");
  }
}

TEST_F(LabelSheetTest, XlsxReaderRejectsWhatIsNotAWorkbook) {
  const std::string fake = csv("ID,Label\n1,0\n", "fake.xlsx");
  EXPECT_NE(usage_error_of([&] { carotid::read_xlsx(fake); }).find("fake.xlsx: cannot read as an .xlsx"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { carotid::read_xlsx(path("none.xlsx")); }).find("none.xlsx: no such file"),
            std::string::npos);
}

// Found by fuzz_label_sheet: liborcus allocated what a damaged zip header
// claimed (2 GiB) before inflating. The claim is refused first.
TEST_F(LabelSheetTest, XlsxPartClaimingGigabytesIsRefusedBeforeItIsRead) {
  const std::string at = xlsx(XRows{{S("ID"), S("Label")}, {1.0, 0.0}});
  std::string bytes;
  {
    std::ifstream in(at, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The central directory's entry comes last; its uncompressed size sits 24
  // bytes into the 46-byte record before the name.
  const size_t name = bytes.rfind("xl/workbook.xml");
  ASSERT_NE(name, std::string::npos);
  bytes.replace(name - 46 + 24, 4, std::string("\x00\x00\x00\x80", 4));
  std::ofstream(at, std::ios::binary | std::ios::trunc) << bytes;
  const std::string message = usage_error_of([&] { carotid::read_xlsx(at); });
  EXPECT_NE(message.find(at + ": cannot read as an .xlsx workbook: part 'xl/workbook.xml' claims 2147483648 bytes, "
                              "more than a label sheet's part may hold (256 MiB)"),
            std::string::npos)
      << message;
}

TEST(ColumnLetters, CountLikeASpreadsheet) {
  EXPECT_EQ(carotid::column_letters(0), "A");
  EXPECT_EQ(carotid::column_letters(25), "Z");
  EXPECT_EQ(carotid::column_letters(26), "AA");
  EXPECT_EQ(carotid::column_letters(701), "ZZ");
  EXPECT_EQ(carotid::column_letters(702), "AAA");
}

// ---- ids ----

TEST(NormalizeId, WholeNumbersLoseTheirFractionOtherTextIsKept) {
  EXPECT_EQ(carotid::cell_number_text(12.0), "12");
  EXPECT_EQ(carotid::cell_number_text(-3.0), "-3");
  EXPECT_EQ(carotid::cell_number_text(12.5), "12.5");
  EXPECT_EQ(carotid::cell_number_text(0.1), "0.1");
  EXPECT_EQ(carotid::cell_number_text(-0.0), "0");
  EXPECT_EQ(carotid::cell_number_text(123456789012.0), "123456789012");
  EXPECT_EQ(carotid::normalize_id_text(" 12.0 "), "12");
  EXPECT_EQ(carotid::normalize_id_text("12."), "12");
  EXPECT_EQ(carotid::normalize_id_text("12"), "12");
  EXPECT_EQ(carotid::normalize_id_text("007"), "007");
  EXPECT_EQ(carotid::normalize_id_text("1.10"), "1.10");
  EXPECT_EQ(carotid::normalize_id_text("P0001"), "P0001");
  EXPECT_EQ(carotid::normalize_id_text("\xC2\xA0P7\xC2\xA0"), "P7");  // no-break spaces
}

TEST_F(LabelSheetTest, NumericAndTextIdsWithExtraColumns) {
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{
      {S("ID"), S("Label"), S("Diagnosis"), S("Age")},
      {12.0, 1.0, S("malignant"), 61.0},
      {S("P7"), 0.0, S("benign"), 40.0},
      {S(" 13 "), S("1"), XCell{}, 55.0},  // text that is a number, padded
      {14.5, 0.0},
  }));
  EXPECT_EQ(sheet.sheet, "labels");
  EXPECT_EQ(sheet.id_column, "ID");
  EXPECT_EQ(sheet.label_column, "Label");
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"12", "P7", "13", "14.5"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(sheet.rows, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(sheet.class_names, (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(sheet.named_classes);
  EXPECT_EQ(sheet.num_classes(), 2);
}

TEST_F(LabelSheetTest, ColumnsAreChosenByHeaderName) {
  LabelSheetOptions options;
  options.id_column = "Patient";
  options.label_column = "Malignant";
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{
                                                {S("Notes"), S("Malignant"), S("Patient")},
                                                {S("x"), 1.0, S("A")},
                                                {S("y"), 0.0, S("B")},
                                            }),
                                            options);
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{1, 0}));
}

TEST_F(LabelSheetTest, OneColumnGivenTheOtherIsTheFirstRemaining) {
  LabelSheetOptions options;
  options.label_column = "y";
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{{S("y"), S("id")}, {1.0, S("A")}}), options);
  EXPECT_EQ(sheet.id_column, "id");
  EXPECT_EQ(sheet.ids, std::vector<std::string>{"A"});
  EXPECT_EQ(sheet.labels, std::vector<int64_t>{1});
}

TEST_F(LabelSheetTest, TheFirstSheetUnlessOneIsNamed) {
  const std::string file = xlsx({
      {"summary", {{S("Person"), S("Class")}, {S("A"), 1.0}}},
      {"labels", {{S("ID"), S("Label")}, {S("B"), 0.0}, {S("C"), 1.0}}},
  });
  EXPECT_EQ(read_label_sheet(file).ids, std::vector<std::string>{"A"});
  LabelSheetOptions options;
  options.sheet = "labels";
  const LabelSheet sheet = read_label_sheet(file, options);
  EXPECT_EQ(sheet.sheet, "labels");
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"B", "C"}));
}

TEST_F(LabelSheetTest, InlineStringsAsOpenpyxlWritesThem) {
  const LabelSheet sheet =
      read_label_sheet(xlsx({{"labels", {{S("ID"), S("Label")}, {S("P1"), S("benign")}, {S("P2"), S("malignant")}}}},
                            /*inline_strings=*/true));
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"P1", "P2"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{0, 1}));
}

TEST_F(LabelSheetTest, HeaderMayStartBelowEmptyRows) {
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{{}, {XCell{}, XCell{}}, {S("ID"), S("Label")}, {S("A"), 1.0}}));
  EXPECT_EQ(sheet.ids, std::vector<std::string>{"A"});
  EXPECT_EQ(sheet.rows, std::vector<int64_t>{4});
}

TEST_F(LabelSheetTest, RowsWithoutAnIdAreSkippedAndCounted) {
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{
      {S("ID"), S("Label"), S("Note")},
      {S("A"), 1.0},
      {XCell{}, 0.0, S("id lost")},  // counted
      {},                            // blank: not counted
      {S("  "), XCell{}, S("x")},    // spaces only: counted
      {S("B"), 0.0},
  }));
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(sheet.rows, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(sheet.skipped_rows, 2);
}

TEST_F(LabelSheetTest, AnEmptyLabelNamesTheRowAndThePerson) {
  const std::string file = xlsx(XRows{{S("ID"), S("Label")}, {S("A"), 1.0}, {S("B"), XCell{}}});
  const std::string message = usage_error_of([&] { read_label_sheet(file); });
  EXPECT_NE(message.find("label.xlsx: row 3: person B has no label in column 'Label' (B)"), std::string::npos)
      << message;
}

TEST_F(LabelSheetTest, DuplicateIdsNameTheirRows) {
  XRows rows = {{S("ID"), S("Label")}};
  for (int i = 1; i <= 8; ++i) rows.push_back({S("P" + std::to_string(i)), 0.0});
  rows[4] = {12.0, 1.0};             // row 5
  rows.push_back({S("12.0"), 1.0});  // row 10: the same person as 12
  const std::string file = xlsx(rows);
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(file); }), path("label.xlsx") + ": person 12 appears in rows 5 and 10");
}

TEST_F(LabelSheetTest, DuplicateIdsTellHowManyMoreThereAre) {
  const std::string file =
      xlsx(XRows{{S("ID"), S("Label")}, {S("A"), 0.0}, {S("B"), 0.0}, {S("A"), 0.0}, {S("B"), 1.0}, {S("A"), 0.0}});
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(file); }),
            path("label.xlsx") + ": person A appears in rows 2, 4 and 6; 1 more person appears more than once: B");
}

TEST_F(LabelSheetTest, ClassNamesAreNumberedInSortedOrder) {
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{
      {S("ID"), S("Diagnosis")},
      {S("A"), S("normal")},
      {S("B"), S("malignant")},
      {S("C"), S("benign")},
      {S("D"), S("malignant")},
      {S("E"), 2.0},       // a number among names is a name too: "2"
      {S("F"), S("2.0")},  // the same class
  }));
  EXPECT_TRUE(sheet.named_classes);
  EXPECT_EQ(sheet.class_names, (std::vector<std::string>{"2", "benign", "malignant", "normal"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{3, 2, 1, 2, 0, 0}));
}

TEST_F(LabelSheetTest, IntegerLabelsAreUsedAsTheyAre) {
  const LabelSheet sheet =
      read_label_sheet(xlsx(XRows{{S("ID"), S("Grade")}, {S("A"), 2.0}, {S("B"), S("0")}, {S("C"), Boolean{true}}}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(sheet.class_names, (std::vector<std::string>{"0", "1", "2"}));
}

TEST_F(LabelSheetTest, NegativeOrHugeIntegerLabelsAreRefused) {
  EXPECT_NE(usage_error_of([&] {
              read_label_sheet(xlsx(XRows{{S("ID"), S("Label")}, {S("A"), -1.0}, {S("B"), 1.0}}));
            }).find("row 2: label -1 of person A is negative"),
            std::string::npos);
  const std::string message = usage_error_of([&] {
    read_label_sheet(xlsx(XRows{{S("ID"), S("Age")}, {S("A"), 61.0}, {S("B"), 1961.0}}));
  });
  EXPECT_NE(message.find("row 3: label 1961 of person B is not a class number"), std::string::npos) << message;
  EXPECT_NE(message.find("data.label_column"), std::string::npos) << message;
}

TEST_F(LabelSheetTest, FormulasCountByTheirCachedResults) {
  const LabelSheet sheet = read_label_sheet(xlsx(XRows{
      {S("ID"), S("Label")},
      {Formula{"=\"P\"&1", S("P1")}, Formula{"=1*1", 1.0}},
      {S("P2"), Formula{"=0*1", 0.0}},
  }));
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"P1", "P2"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{1, 0}));
}

TEST_F(LabelSheetTest, AMissingColumnListsTheColumns) {
  const std::string file = xlsx(XRows{{S("ID"), S("Label"), S("Diagnosis")}, {S("A"), 1.0}});
  LabelSheetOptions options;
  options.label_column = "label";
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(file, options); }),
            path("label.xlsx") +
                ": no column 'label' in sheet 'labels' (did you mean 'Label'?) (set "
                "data.label_column); columns: 'ID', 'Label', 'Diagnosis'");
}

TEST_F(LabelSheetTest, AMissingSheetListsTheSheets) {
  const std::string file = xlsx({{"Sheet1", {{S("ID"), S("Label")}}}, {"Notes", {}}});
  LabelSheetOptions options;
  options.sheet = "labels";
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(file, options); }),
            path("label.xlsx") +
                ": no sheet named 'labels' (set data.label_sheet; empty reads the first sheet); "
                "sheets: 'Sheet1', 'Notes'");
}

TEST_F(LabelSheetTest, AnEmptySheetOrOneWithoutPersonsIsAnError) {
  const std::string empty = xlsx(std::vector<XSheet>{{"labels", {}}});
  EXPECT_NE(usage_error_of([&] { read_label_sheet(empty); }).find("sheet 'labels' is empty"), std::string::npos);
  EXPECT_NE(usage_error_of([&] {
              read_label_sheet(xlsx(XRows{{S("ID"), S("Label")}}));
            }).find("no row below the header has a person id"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] {
              read_label_sheet(xlsx(XRows{{S("ID")}, {S("A")}}));
            }).find("needs two named columns"),
            std::string::npos);
}

TEST_F(LabelSheetTest, CsvLabels) {
  const LabelSheet sheet = read_label_sheet(csv("ID,Label,Note\n12.0,1,x\nP7,0,\n,1,lost\n 13 ,1.0,\n"));
  EXPECT_EQ(sheet.sheet, "");
  EXPECT_EQ(sheet.ids, (std::vector<std::string>{"12", "P7", "13"}));
  EXPECT_EQ(sheet.labels, (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(sheet.rows, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(sheet.skipped_rows, 1);
}

TEST_F(LabelSheetTest, CsvErrorsNameLines) {
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(csv("id,y\n12,1\n13,0\n12.0,1\n")); }),
            path("label.csv") + ": person 12 appears in lines 2 and 4");
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(csv("id,y\n12,1\n13,\n")); }),
            path("label.csv") + ": line 3: person 13 has no label in column 'y'");
  LabelSheetOptions options;
  options.id_column = "ID";
  EXPECT_EQ(usage_error_of([&] { read_label_sheet(csv("id,y\n12,1\n"), options); }),
            path("label.csv") + ": no column 'ID' (did you mean 'id'?) (set data.id_column); columns: 'id', 'y'");
}

TEST_F(LabelSheetTest, OtherFilesAreRefused) {
  EXPECT_NE(usage_error_of([&] { read_label_sheet(csv("x", "labels.txt")); }).find("must be an .xlsx or .csv file"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { read_label_sheet(path("missing.xlsx")); }).find("no such file"), std::string::npos);
  EXPECT_NE(usage_error_of([&] { read_label_sheet(path("missing.csv")); }).find("missing.csv"), std::string::npos);
}

// ---- the real data: written by openpyxl (absolute part names, inline strings) ----

TEST(LabelSheetRealData, BreastUltrasoundLabels) {
  const std::string found = carotid::testing::shared_data("breast_ultrasound/label.xlsx");
  if (found.empty()) GTEST_SKIP() << "../shared/data/breast_ultrasound/label.xlsx is absent";
  LabelSheetOptions options;
  options.sheet = "labels";
  options.id_column = "ID";
  options.label_column = "Label";
  const LabelSheet sheet = read_label_sheet(found, options);
  EXPECT_EQ(sheet.ids.size(), 214u);
  int64_t positives = 0;
  for (int64_t label : sheet.labels) positives += label;
  EXPECT_EQ(positives, 60);
  EXPECT_EQ(sheet.num_classes(), 2);
  EXPECT_EQ(sheet.ids[0], "P0203");
  // The defaults read the same columns.
  EXPECT_EQ(read_label_sheet(found).ids, sheet.ids);
}

}  // namespace
