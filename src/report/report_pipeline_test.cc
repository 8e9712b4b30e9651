// The report pipeline (BuildRunReport) on the golden GRPO captures: a run, a run against a
// baseline, a baseline with no trace (the Status, named), an unreadable input (listed, the others
// analysed).
#include "src/report/report_pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace rlprof::report {
namespace {

namespace fs = std::filesystem;

const std::string kRun = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/grpo_tiny_step2";

ReportRequest Request(const std::string& path, const std::string& baseline = "") {
  return {.path = path, .baseline = baseline, .title = "t", .baseline_label = "b", .current_label = "c",
          .classifier = analysis::Classifier::Default(), .jobs = 2};
}

TEST(ReportPipelineTest, ARunAndItsComparisonWithItself) {
  RunReport r;
  ASSERT_TRUE(BuildRunReport(Request(kRun), &r).ok());
  EXPECT_EQ(r.inputs, 8u);
  EXPECT_FALSE(r.compared);
  EXPECT_TRUE(r.unreadable.empty());
  EXPECT_EQ(r.data["title"], "t");
  RunReport c;
  ASSERT_TRUE(BuildRunReport(Request(kRun, kRun), &c).ok());
  EXPECT_TRUE(c.compared);
  EXPECT_TRUE(c.data.contains("compare"));
}

TEST(ReportPipelineTest, ABaselineWithoutTracesIsTheStatusNamingItsSide) {
  const std::string empty = ::testing::TempDir() + "/report_pipeline_empty";
  fs::create_directories(empty);
  RunReport r;
  base::Status s = BuildRunReport(Request(kRun, empty), &r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("baseline: ", 0), 0u) << s.message();
}

TEST(ReportPipelineTest, AnUnreadableInputIsListedAndTheOthersAnalysed) {
  const std::string dir = ::testing::TempDir() + "/report_pipeline_bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(kRun, dir + "/run", fs::copy_options::recursive);
  // Named like an Ascend profiler database, but not one: found by the walk, refused by the reader.
  std::ofstream(dir + "/run/ascend_pytorch_profiler_0.db") << "not a database";
  RunReport r;
  ASSERT_TRUE(BuildRunReport(Request(dir + "/run"), &r).ok());
  EXPECT_EQ(r.inputs, 9u);
  ASSERT_EQ(r.unreadable.size(), 1u);
  EXPECT_EQ(r.unreadable[0].side, "");
  EXPECT_NE(r.unreadable[0].input.find("ascend_pytorch_profiler_0.db"), std::string::npos);
  EXPECT_NE(r.unreadable[0].why.find("not an SQLite file"), std::string::npos) << r.unreadable[0].why;
}

}  // namespace
}  // namespace rlprof::report
