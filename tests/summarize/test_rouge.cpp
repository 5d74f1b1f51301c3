#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "rouge/porter_stemmer.h"
#include "rouge/rouge.h"
#include "rouge/score_command.h"
#include "rouge/tokenize.h"
#include "tandem/error.h"

using summarize::porter_stem;
using summarize::Prf;
using summarize::rouge;
using summarize::rouge_multi;
using summarize::rouge_tokenize;
using summarize::RougeScores;
using tandem::testing::message_of;
using Tokens = std::vector<std::string>;

namespace {

void expect_prf(const Prf& got, double precision, double recall, double f1) {
  EXPECT_DOUBLE_EQ(got.precision, precision);
  EXPECT_DOUBLE_EQ(got.recall, recall);
  EXPECT_DOUBLE_EQ(got.f1, f1);
}

void expect_all(const RougeScores& scores, double precision, double recall, double f1) {
  ASSERT_EQ(scores.size(), 4u);
  for (const char* key : {"rouge1", "rouge2", "rougeL", "rougeLsum"}) {
    SCOPED_TRACE(key);
    expect_prf(scores.at(key), precision, recall, f1);
  }
}

}  // namespace

TEST(PorterStem, PaperExamples) {
  EXPECT_EQ(porter_stem("caresses"), "caress");
  EXPECT_EQ(porter_stem("ponies"), "poni");
  EXPECT_EQ(porter_stem("cats"), "cat");
  EXPECT_EQ(porter_stem("running"), "run");
  EXPECT_EQ(porter_stem("hopping"), "hop");
  EXPECT_EQ(porter_stem("filing"), "file");
  EXPECT_EQ(porter_stem("feed"), "feed");
  EXPECT_EQ(porter_stem("relational"), "relat");
  EXPECT_EQ(porter_stem("conditional"), "condit");
  EXPECT_EQ(porter_stem("controlling"), "control");
}

// Where NLTK_EXTENSIONS departs from the paper; each value is what NLTK 3.8's
// PorterStemmer().stem() returns.
TEST(PorterStem, NltkExtensions) {
  EXPECT_EQ(porter_stem("generously"), "gener");  // alli -> al, then step 2 again
  EXPECT_EQ(porter_stem("dies"), "die");          // 4-letter "ies" -> "ie"
  EXPECT_EQ(porter_stem("flies"), "fli");
  EXPECT_EQ(porter_stem("dying"), "die");  // irregular forms
  EXPECT_EQ(porter_stem("news"), "news");
  EXPECT_EQ(porter_stem("happy"), "happi");     // y -> i after a consonant...
  EXPECT_EQ(porter_stem("enjoy"), "enjoy");     // ...but not after a vowel
  EXPECT_EQ(porter_stem("geology"), "geolog");  // logi -> log counting the l
  EXPECT_EQ(porter_stem("agreed"), "agre");     // eed -> ee, then step 5a drops the e
  EXPECT_EQ(porter_stem("ab"), "ab");           // 1-2 letters are left alone
}

// A degenerate generation can be one huge token. NLTK gives y^9 + "i" for
// y^10 + "ing" (drop "ing"; the last of an even run of y's is a vowel; y -> i).
TEST(PorterStem, HugeTokensStayCheap) {
  EXPECT_EQ(porter_stem(std::string(10, 'y') + "ing"), std::string(9, 'y') + "i");
  EXPECT_EQ(porter_stem(std::string(100000, 'y') + "ing"), std::string(99999, 'y') + "i");
}

TEST(RougeTokenize, LowercasesAndSplitsOnAllButLettersAndDigits) {
  EXPECT_EQ(rouge_tokenize("Hello, WORLD!! It's 5pm:\tok?", false), (Tokens{"hello", "world", "it", "s", "5pm", "ok"}));
  EXPECT_EQ(rouge_tokenize(" \n--- ", false), Tokens{});
}

// Python lowercases the code points, then keeps only [a-z0-9]: accented
// letters break words, and only two characters lowercase to ASCII.
TEST(RougeTokenize, NonAsciiAsPythonLowercasesIt) {
  EXPECT_EQ(rouge_tokenize("café naïve", false), (Tokens{"caf", "na", "ve"}));
  EXPECT_EQ(rouge_tokenize("\u0130zmir", false), (Tokens{"i", "zmir"}));  // "i" + U+0307
  EXPECT_EQ(rouge_tokenize("5\u212A", false), Tokens{"5k"});              // KELVIN SIGN
  EXPECT_EQ(rouge_tokenize("\xff\xfe", false), Tokens{});
}

TEST(RougeTokenize, StemsOnlyWordsLongerThanThree) {
  // porter_stem("was") is "wa" and porter_stem("its") is "it", but rouge_score
  // stems only tokens of more than 3 characters.
  EXPECT_EQ(rouge_tokenize("Cats was running its", true), (Tokens{"cat", "was", "run", "its"}));
  EXPECT_EQ(rouge_tokenize("Cats was running its", false), (Tokens{"cats", "was", "running", "its"}));
}

TEST(Rouge, IdenticalIsOne) {
  expect_all(rouge("The cat sat on the mat.\nIt purred.", "The cat sat on the mat.\nIt purred.", false), 1, 1, 1);
}

TEST(Rouge, DisjointIsZero) { expect_all(rouge("alpha beta", "gamma delta", true), 0, 0, 0); }

TEST(Rouge, EmptyPredictionIsZero) {
  expect_all(rouge("the cat", "", false), 0, 0, 0);
  expect_all(rouge("the cat", "?!\n", false), 0, 0, 0);
  // As in rouge_score, two empty texts score 0, not 1.
  expect_all(rouge("", "", false), 0, 0, 0);
}

TEST(Rouge, CaseAndPunctuationDoNotCount) { expect_all(rouge("Hello, world!", "hello WORLD", false), 1, 1, 1); }

TEST(Rouge, WorkedExampleClipsRepeatedNgrams) {
  // target     the cat the cat sat   (5 tokens)
  // prediction the the the cat       (4 tokens)
  const RougeScores s = rouge("the cat the cat sat", "the the the cat", false);
  // rouge1: target {the:2, cat:2, sat:1}, prediction {the:3, cat:1};
  // overlap min(2,3) + min(2,1) = 3. P = 3/4, R = 3/5,
  // F = 2 (3/4)(3/5) / (3/4 + 3/5) = (9/10) / (27/20) = 2/3.
  expect_prf(s.at("rouge1"), 3.0 / 4, 3.0 / 5, 2.0 / 3);
  // rouge2: target {the cat:2, cat the:1, cat sat:1} (4), prediction
  // {the the:2, the cat:1} (3); overlap min(2,1) = 1. P = 1/3, R = 1/4,
  // F = 2 (1/12) / (7/12) = 2/7.
  expect_prf(s.at("rouge2"), 1.0 / 3, 1.0 / 4, 2.0 / 7);
  // rougeL: the target has two "the", the prediction one "cat", so the LCS is
  // "the the cat" = 3: same P, R, F as rouge1.
  expect_prf(s.at("rougeL"), 3.0 / 4, 3.0 / 5, 2.0 / 3);
  // One line each: rougeLsum is rougeL.
  expect_prf(s.at("rougeLsum"), 3.0 / 4, 3.0 / 5, 2.0 / 3);
}

TEST(Rouge, LsumMatchesSentencesInAnyOrder) {
  const RougeScores s = rouge("alice paid bob\ncarol left", "carol left\nalice paid bob", false);
  // rougeL over the whole texts: LCS("alice paid bob carol left",
  // "carol left alice paid bob") = "alice paid bob" = 3 of 5 each side.
  expect_prf(s.at("rougeL"), 3.0 / 5, 3.0 / 5, 3.0 / 5);
  // rougeLsum: "alice paid bob" meets its twin (3 hits), "carol left" its own
  // (2 hits): 5 of 5.
  expect_prf(s.at("rougeLsum"), 1, 1, 1);
  // Bigrams: 4 in each; all but "bob carol" / "left alice" match: 3/4.
  expect_prf(s.at("rouge2"), 3.0 / 4, 3.0 / 4, 3.0 / 4);
}

TEST(Rouge, LsumTakesTheUnionOfLcsOverPredictionSentences) {
  // Lin (2004), section 3.2: r = w1..w5, c1 = w1 w2 w6 w7 w8,
  // c2 = w1 w3 w8 w9 w5. LCS(r, c1) = w1 w2, LCS(r, c2) = w1 w3 w5; the union
  // w1 w2 w3 w5 is 4 hits. R = 4/5, P = 4/10, F = 2 (0.8)(0.4) / 1.2 = 8/15.
  const RougeScores s = rouge("w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", false);
  expect_prf(s.at("rougeLsum"), 4.0 / 10, 4.0 / 5, 8.0 / 15);
}

TEST(Rouge, LsumCountsEachTokenAsAHitAtMostOnce) {
  // Both target lines' union LCS is "x y", but the prediction holds one x and
  // one y: 2 hits, not 4. P = 2/2, R = 2/4, F = 2 (1)(1/2) / (3/2) = 2/3.
  const RougeScores s = rouge("x y\nx y", "x y", false);
  expect_prf(s.at("rougeLsum"), 1, 1.0 / 2, 2.0 / 3);
}

TEST(Rouge, StemmingMatchesInflections) {
  // Stemmed: "the cat were run" vs "the cat run": 3 of 3 predicted, 3 of 4
  // target; F = 2 (1)(3/4) / (7/4) = 6/7.
  expect_prf(rouge("The cats were running", "the cat runs", true).at("rouge1"), 1, 3.0 / 4, 6.0 / 7);
  // Unstemmed only "the" matches: P = 1/3, R = 1/4, F = 2 (1/12) / (7/12) = 2/7.
  expect_prf(rouge("The cats were running", "the cat runs", false).at("rouge1"), 1.0 / 3, 1.0 / 4, 2.0 / 7);
}

TEST(RougeMulti, TakesTheBestReferencePerMetric) {
  // Prediction "x y z". Reference "z y x": rouge1 P = R = F = 1, rouge2 0.
  // Reference "x y q w": rouge1 overlap 2, P = 2/3, R = 2/4, F = 4/7;
  // rouge2 overlap 1 ("x y"), P = 1/2, R = 1/3, F = 2 (1/6) / (5/6) = 2/5.
  const RougeScores s = rouge_multi({"z y x", "x y q w"}, "x y z", false);
  expect_prf(s.at("rouge1"), 1, 1, 1);
  expect_prf(s.at("rouge2"), 1.0 / 2, 1.0 / 3, 2.0 / 5);
}

TEST(RougeMulti, TiesGoToTheFirstReference) {
  // Prediction "x y". Reference "x": P = 1/2, R = 1, F = 2/3. Reference
  // "x y q w": P = 1, R = 1/2, F = 2/3. Same F; the first one's P and R.
  expect_prf(rouge_multi({"x", "x y q w"}, "x y", false).at("rouge1"), 1.0 / 2, 1, 2.0 / 3);
  expect_prf(rouge_multi({"x y q w", "x"}, "x y", false).at("rouge1"), 1, 1.0 / 2, 2.0 / 3);
}

TEST(MeanScores, AveragesEachField) {
  const RougeScores mean = summarize::mean_scores({{{"rouge1", {1, 0.5, 0.25}}}, {{"rouge1", {0, 0.25, 0.75}}}});
  expect_prf(mean.at("rouge1"), 0.5, 0.375, 0.5);
  EXPECT_TRUE(summarize::mean_scores({}).empty());
}

TEST(ToJson, OneLinePerMetricObject) {
  EXPECT_EQ(summarize::to_json({{"rouge1", {1, 0.5, 0.25}}, {"rougeL", {0, 0, 0}}}),
            R"({"rouge1":{"precision":1.0,"recall":0.5,"f1":0.25},)"
            R"("rougeL":{"precision":0.0,"recall":0.0,"f1":0.0}})");
}

class ScoreCommand : public tandem::testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
};

TEST_F(ScoreCommand, PrintsMeanOfBestReferenceScores) {
  const std::string pred = write("pred.csv", "id,summary\n1,the cat sat\n2,\"a dog, barking\"\n");
  const std::string ref = write("ref.csv", "summary,id\nthe cat sat,1\na cat barked,2\n\"a dog, barking\",2\n");
  std::ostringstream out;
  EXPECT_EQ(summarize::score_command(pred, ref, true, out), tandem::kExitOk);
  // Both predictions equal one of their references: every score is 1.
  const nlohmann::json json = nlohmann::json::parse(out.str());
  for (const char* key : {"rouge1", "rouge2", "rougeL", "rougeLsum"})
    for (const char* field : {"precision", "recall", "f1"})
      EXPECT_DOUBLE_EQ(json.at(key).at(field).get<double>(), 1.0) << key << " " << field;
}

TEST_F(ScoreCommand, AveragesOverExamples) {
  // Example 1 scores 1; example 2 shares nothing: means are 1/2.
  const std::string pred = write("pred.csv", "id,summary\n1,the cat\n2,the dog\n");
  const std::string ref = write("ref.csv", "id,summary\n1,the cat\n2,a bird flew\n");
  std::ostringstream out;
  summarize::score_command(pred, ref, false, out);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(out.str())["rouge1"]["f1"].get<double>(), 0.5);
}

TEST_F(ScoreCommand, MissingIdsOnEitherSideAreNamed) {
  const std::string pred = write("pred.csv", "id,summary\n1,a\n2,b\n9,c\n");
  const std::string ref = write("ref.csv", "id,summary\n1,a\n2,b\n3,c\n");
  const std::string message = message_of<tandem::UsageError>([&] {
    std::ostringstream out;
    summarize::score_command(pred, ref, false, out);
  });
  EXPECT_NE(message.find("1 of 3 reference ids have no prediction: 3"), std::string::npos) << message;
  EXPECT_NE(message.find("1 of 3 prediction ids have no reference: 9"), std::string::npos) << message;
}

TEST_F(ScoreCommand, ListsAtMostFiveMissingIds) {
  const std::string pred = write("pred.csv", "id,summary\n1,a\n");
  const std::string ref = write("ref.csv", "id,summary\n1,a\n2,a\n3,a\n4,a\n5,a\n6,a\n7,a\n8,a\n");
  const std::string message = message_of<tandem::UsageError>([&] {
    std::ostringstream out;
    summarize::score_command(pred, ref, false, out);
  });
  EXPECT_NE(message.find("7 of 8 reference ids have no prediction: 2, 3, 4, 5, 6, ... (2 more)"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("prediction ids have no reference"), std::string::npos) << message;
}

TEST_F(ScoreCommand, RejectsTwoPredictionsForOneId) {
  const std::string pred = write("pred.csv", "id,summary\n1,a\n2,b\n1,c\n");
  const std::string ref = write("ref.csv", "id,summary\n1,a\n2,b\n");
  const std::string message = message_of<tandem::UsageError>([&] {
    std::ostringstream out;
    summarize::score_command(pred, ref, false, out);
  });
  EXPECT_NE(message.find("pred.csv:4: id '1' already has a prediction on line 2"), std::string::npos) << message;
}

TEST_F(ScoreCommand, RejectsNoPredictionsAndMissingColumns) {
  const std::string empty = write("empty.csv", "id,summary\n");
  const std::string ref = write("ref.csv", "id,summary\n1,a\n");
  const std::string no_summary = write("bad.csv", "id,text\n1,a\n");
  std::ostringstream out;
  EXPECT_NE(message_of<tandem::UsageError>([&] {
              summarize::score_command(empty, ref, false, out);
            }).find("no predictions to score"),
            std::string::npos);
  EXPECT_NE(message_of<tandem::UsageError>([&] {
              summarize::score_command(no_summary, ref, false, out);
            }).find("no column 'summary'"),
            std::string::npos);
  EXPECT_TRUE(out.str().empty());
}
