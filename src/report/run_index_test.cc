// The runs `rlprof serve` lists: which folders are runs, what is read from their manifests,
// the order, links out of the save path, and escaping of hostile names in the pages.
#include "src/report/run_index.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/format/sample_capture.h"

namespace rlprof::report {
namespace {
namespace fs = std::filesystem;

class RunIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("rlprof_run_index_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Capture(const std::string& rel, int which) {
    auto caps = format::SampleCaptures();
    ASSERT_TRUE(format::WriteSampleCaptureDir((root_ / rel).string(), caps[which]).ok());
  }
  fs::path root_;
};

TEST_F(RunIndexTest, EveryFolderWithCapturesIsARunNewestFirst) {
  Capture("old/step1/e2e/rank0-h-1", 0);
  Capture("old/step1/e2e/rank1-h-2", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Capture("new/step2/e2e/rank0-h-3", 0);
  fs::create_directories(root_ / "empty" / "step1");
  fs::create_directories(root_ / ".rlprof-serve");
  const RunIndex idx = ListRuns(root_.string());
  ASSERT_EQ(idx.runs.size(), 2u);
  EXPECT_EQ(idx.runs[0].id, "new");
  EXPECT_EQ(idx.runs[1].id, "old");
  EXPECT_EQ(idx.runs[1].captures.size(), 2u);
  EXPECT_EQ(idx.runs[1].ranks, (std::set<int64_t>{0, 1}));
  EXPECT_GT(idx.runs[1].bytes, 0u);
  EXPECT_NE(FindRun(idx, "old"), nullptr);
  EXPECT_EQ(FindRun(idx, "../old"), nullptr);
  EXPECT_EQ(FindRun(idx, "empty"), nullptr);
  // One run alone: the same captures, without the others' manifests or the size walk.
  const auto one = LoadRun(root_.string(), "old");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->captures, idx.runs[1].captures);
  EXPECT_EQ(one->ranks, idx.runs[1].ranks);
  EXPECT_FALSE(LoadRun(root_.string(), "../old").has_value());
  EXPECT_FALSE(LoadRun(root_.string(), "empty").has_value());
  EXPECT_FALSE(LoadRun(root_.string(), "").has_value());
}

TEST_F(RunIndexTest, AFolderLinkedFromOutsideTheSavePathIsNotServed) {
  const fs::path outside = root_.string() + "_outside";
  fs::remove_all(outside);
  auto caps = format::SampleCaptures();
  ASSERT_TRUE(format::WriteSampleCaptureDir((outside / "step1/e2e/rank0-h-1").string(), caps[0]).ok());
  fs::create_directories(root_ / "save");
  fs::create_symlink(outside, root_ / "save" / "linked");
  const RunIndex idx = ListRuns((root_ / "save").string());
  EXPECT_TRUE(idx.runs.empty());
  EXPECT_EQ(idx.diagnostics.Get("input_unreadable_dir"), 1u);
  fs::remove_all(outside);
}

TEST_F(RunIndexTest, PagesEscapeHostileRunNames) {
  const std::string evil = "<img src=x onerror=alert(1)>\"'&";  // a folder name: no '/'

  Capture(evil + "/step1/e2e/rank0-h-1", 0);
  const RunIndex idx = ListRuns(root_.string());
  ASSERT_EQ(idx.runs.size(), 1u);
  const std::string page = RunListPage(idx, "?token=t<");
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;"), std::string::npos);
  EXPECT_NE(page.find("/runs/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%22%27%26/report.html"), std::string::npos);
  EXPECT_EQ(page.find("token=t<"), std::string::npos);
  const std::string caps = CaptureListPage(idx.runs[0], "");
  EXPECT_EQ(caps.find("<img"), std::string::npos);
  EXPECT_EQ(ErrorPage(404, evil).find("<img"), std::string::npos);
}

TEST_F(RunIndexTest, AMissingSavePathIsAnEmptyListWithADiagnostic) {
  const RunIndex idx = ListRuns((root_ / "nope").string());
  EXPECT_TRUE(idx.runs.empty());
  EXPECT_EQ(idx.diagnostics.Get("input_unreadable_dir"), 1u);
}

}  // namespace
}  // namespace rlprof::report
