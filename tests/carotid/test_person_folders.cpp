// Person folders: the scan (nested folders, image types, hidden files), the
// pairing of folders with sheet rows, and the seeded image subset.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "data/person_folders.h"
#include "labels/label_sheet.h"
#include "shared_data.h"
#include "tandem/error.h"

namespace {

namespace fs = std::filesystem;
using carotid::LabelSheet;
using carotid::Person;
using carotid::PersonFolder;
using tandem::UsageError;

LabelSheet sheet_of(const std::vector<std::string>& ids, const std::vector<int64_t>& labels) {
  LabelSheet sheet;
  sheet.path = "label.xlsx";
  sheet.sheet = "labels";
  sheet.ids = ids;
  sheet.labels = labels;
  for (size_t i = 0; i < ids.size(); ++i) sheet.rows.push_back(static_cast<int64_t>(i) + 2);
  sheet.class_names = {"0", "1"};
  return sheet;
}

class PersonFoldersTest : public tandem::testing::TempDirTest {
 protected:
  void touch(const std::string& relative) {
    const fs::path at = dir_ / "root" / relative;
    fs::create_directories(at.parent_path());
    std::ofstream(at) << "x";
  }
  std::string root() const { return (dir_ / "root").string(); }
  std::string rel(const std::string& path) const {
    return fs::path(path).lexically_relative(dir_ / "root").generic_string();
  }
};

TEST(ImageFiles, AreKnownByExtensionInAnyCase) {
  for (const char* name : {"a.png", "a.PNG", "b.jpg", "c.JPEG", "d.jpeg", "e.bmp", "dir/f.Png"})
    EXPECT_TRUE(carotid::is_image_file(name)) << name;
  for (const char* name : {"a.txt", "png", "a.png.txt", "a.tif", "label.xlsx", ".png.bak"})
    EXPECT_FALSE(carotid::is_image_file(name)) << name;
}

TEST_F(PersonFoldersTest, ScanFindsImagesInNestedFoldersSorted) {
  touch("P2/b.png");
  touch("P2/a.JPG");
  touch("P2/visit2/left/c.jpeg");
  touch("P2/visit1/d.bmp");
  touch("P2/notes.txt");
  touch("P2/.hidden.png");
  touch("P2/.cache/e.png");
  touch("P1/x.png");
  touch("empty/readme.md");
  touch(".git/objects/f.png");
  touch("label.xlsx");  // a file beside the folders
  const std::vector<PersonFolder> folders = carotid::scan_person_folders(root());
  ASSERT_EQ(folders.size(), 3u);
  EXPECT_EQ(folders[0].id, "P1");
  EXPECT_EQ(folders[1].id, "P2");
  EXPECT_EQ(folders[2].id, "empty");
  std::vector<std::string> images;
  for (const auto& image : folders[1].images) images.push_back(rel(image));
  EXPECT_EQ(images, (std::vector<std::string>{"P2/a.JPG", "P2/b.png", "P2/visit1/d.bmp", "P2/visit2/left/c.jpeg"}));
  EXPECT_TRUE(folders[2].images.empty());
}

TEST_F(PersonFoldersTest, AMissingRootIsAUsageError) {
  EXPECT_EQ(tandem::testing::usage_error_of([&] { carotid::scan_person_folders(path("nowhere")); }),
            path("nowhere") +
                ": no such folder (set data.root to the folder with one sub-folder of images per "
                "person)");
  std::ofstream(path("file")) << "x";
  EXPECT_NE(tandem::testing::usage_error_of([&] {
              carotid::scan_person_folders(path("file"), "data.images");
            }).find("is not a folder (set data.images"),
            std::string::npos);
}

TEST_F(PersonFoldersTest, MatchListsAndCountsWhatDoesNotPair) {
  touch("A/1.png");
  touch("B/1.png");
  touch("B/2.png");
  touch("C/1.png");      // no label
  touch("D/1.png");      // no label
  touch("E/notes.txt");  // labelled, but no images
  const LabelSheet sheet = sheet_of({"B", "A", "X", "E", "Y"}, {1, 0, 1, 0, 0});
  const auto match = carotid::match_persons(sheet, carotid::scan_person_folders(root()), root());
  ASSERT_EQ(match.persons.size(), 2u);
  EXPECT_EQ(match.persons[0].id, "B");  // sheet order
  EXPECT_EQ(match.persons[0].label, 1);
  EXPECT_EQ(match.persons[0].images.size(), 2u);
  EXPECT_EQ(match.persons[0].row, 2);
  EXPECT_EQ(match.persons[1].id, "A");
  EXPECT_EQ(match.without_folder, (std::vector<std::string>{"X", "Y"}));
  EXPECT_EQ(match.without_label, (std::vector<std::string>{"C", "D"}));
  EXPECT_EQ(match.without_images, std::vector<std::string>{"E"});
  EXPECT_EQ(match.image_count, 3);
  EXPECT_EQ(match.summary(1),
            "2 persons with 3 images; 2 persons in the sheet without a folder (X ... (1 more)); "
            "1 person with a folder but no images (E); 2 folders not in the sheet (C ... (1 more))");
}

TEST_F(PersonFoldersTest, LeadingZerosMatchWhenUnambiguous) {
  touch("007/a.png");  // Excel turned "007" into 7
  touch("12/a.png");
  touch("012/a.png");  // "12" exists too: 12 takes its exact folder, 012 stays unlabelled
  const auto match =
      carotid::match_persons(sheet_of({"7", "12"}, {1, 0}), carotid::scan_person_folders(root()), root());
  ASSERT_EQ(match.persons.size(), 2u);
  EXPECT_EQ(rel(match.persons[0].images[0]), "007/a.png");
  EXPECT_EQ(rel(match.persons[1].images[0]), "12/a.png");
  EXPECT_EQ(match.without_label, std::vector<std::string>{"012"});
}

TEST_F(PersonFoldersTest, NoMatchAtAllIsAUsageErrorShowingBothSides) {
  touch("p1/a.png");
  const std::string message = tandem::testing::usage_error_of([&] {
    carotid::match_persons(sheet_of({"P1", "P2"}, {0, 1}), carotid::scan_person_folders(root()), root());
  });
  EXPECT_NE(message.find("no person has both a label in label.xlsx and images under " + root()), std::string::npos)
      << message;
  EXPECT_NE(message.find("ids in the sheet: P1, P2; folders: p1"), std::string::npos) << message;
}

std::vector<Person> persons_with_images(int persons, int images) {
  std::vector<Person> out;
  for (int p = 0; p < persons; ++p) {
    Person person;
    person.id = "P" + std::to_string(p);
    for (int i = 0; i < images; ++i) person.images.push_back(person.id + "/img" + std::to_string(i) + ".png");
    std::sort(person.images.begin(), person.images.end());
    out.push_back(person);
  }
  return out;
}

TEST(LimitImages, KeepsASeededSortedSubsetPerPerson) {
  auto persons = persons_with_images(5, 10);
  persons[4].images.resize(2);  // fewer than the limit: kept whole
  const auto original = persons;
  carotid::limit_images_per_person(persons, 3, 42);
  for (size_t p = 0; p < persons.size(); ++p) {
    const auto& kept = persons[p].images;
    EXPECT_EQ(kept.size(), p == 4 ? 2u : 3u);
    EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
    EXPECT_EQ(std::set<std::string>(kept.begin(), kept.end()).size(), kept.size());
    for (const auto& image : kept)
      EXPECT_NE(std::find(original[p].images.begin(), original[p].images.end(), image), original[p].images.end());
  }
  auto again = original;
  carotid::limit_images_per_person(again, 3, 42);
  for (size_t p = 0; p < persons.size(); ++p) EXPECT_EQ(again[p].images, persons[p].images);

  // A person's subset does not depend on the other persons.
  std::vector<Person> alone = {original[2]};
  carotid::limit_images_per_person(alone, 3, 42);
  EXPECT_EQ(alone[0].images, persons[2].images);

  // Another seed, another subset (for some person), and 0 keeps everything.
  auto other = original;
  carotid::limit_images_per_person(other, 3, 43);
  bool differs = false;
  for (size_t p = 0; p < persons.size(); ++p) differs |= other[p].images != persons[p].images;
  EXPECT_TRUE(differs);
  auto all = original;
  carotid::limit_images_per_person(all, 0, 42);
  EXPECT_EQ(all[0].images.size(), 10u);
}

TEST(LimitImages, IsTheSameOnEveryPlatform) {
  // Pinned: splitmix64 and Fisher-Yates are written out, so this subset is
  // what every build draws (checked against an independent Python version of
  // the same steps). A change here changes users' data sets.
  auto persons = persons_with_images(1, 10);
  carotid::limit_images_per_person(persons, 4, 2024);
  const std::vector<std::string> expected = persons[0].images;
  auto again = persons_with_images(1, 10);
  carotid::limit_images_per_person(again, 4, 2024);
  EXPECT_EQ(again[0].images, expected);
  EXPECT_EQ(expected, (std::vector<std::string>{"P0/img0.png", "P0/img4.png", "P0/img6.png", "P0/img8.png"}));
}

TEST(PersonFoldersRealData, EveryLabelledPersonHasImages) {
  const std::string labels = carotid::testing::shared_data("breast_ultrasound/label.xlsx");
  const std::string root = carotid::testing::shared_data("breast_ultrasound/images");
  if (labels.empty() || root.empty()) GTEST_SKIP() << "../shared/data/breast_ultrasound is absent";
  const auto match =
      carotid::match_persons(carotid::read_label_sheet(labels), carotid::scan_person_folders(root), root);
  EXPECT_EQ(match.persons.size(), 214u);
  EXPECT_EQ(match.image_count, 624);
  EXPECT_TRUE(match.without_folder.empty());
  EXPECT_TRUE(match.without_label.empty());
  for (const auto& person : match.persons) {
    EXPECT_GE(person.images.size(), 1u);
    EXPECT_LE(person.images.size(), 5u);
  }
}

}  // namespace
