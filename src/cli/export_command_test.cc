// `rlprof export`: a tiny capture written with RawWriter + a manifest, exported three ways.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"
#include "src/format/raw.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;
using format::Event;

class ExportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("rlprof_cli_export_" + std::to_string(::getpid())) /
             ::testing::UnitTest::GetInstance()->current_test_info()->name())
                .string();
    fs::remove_all(root_);
    capture_ = root_ + "/run1/step2/e2e/rank0-h-77";
    fs::create_directories(capture_);
    std::ofstream(capture_ + "/manifest.json")
        << R"({"format": "rlprof-capture", "format_version": 1, "run_id": "run1",
               "scope": "e2e", "identity": {"rank": 0, "host": "h", "pid": 77},
               "complete": true})";
    auto w = format::RawWriter::Create(capture_ + "/events.rlp", {0, 77, "h"});
    ASSERT_TRUE(w.ok());
    std::vector<format::StringEntry> strings = {{1, "rl/step"}, {2, "actor_update"}, {3, "actor"}};
    ASSERT_TRUE((*w)->AddStrings(strings).ok());
    format::TrackEntry t{1, format::TrackKind::kThread, 77, 77, "main"};
    ASSERT_TRUE((*w)->AddTracks({&t, 1}).ok());
    Event step{1000, 9000, 1, 1, format::EventKind::kComplete, format::Category::kStep, 2, 0};
    Event stage{2000, 5000, 2, 1, format::EventKind::kComplete, format::Category::kStage, 0, 3};
    Event mark{3000, 0, 1, 1, format::EventKind::kInstant, format::Category::kUser, 0, 0};
    std::vector<Event> events = {step, stage, mark};
    ASSERT_TRUE((*w)->AddEvents(events).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root_;
  std::string capture_;
};

TEST_F(ExportCommandTest, ExportsACaptureDirectoryInAllThreeFormats) {
  for (std::string name : {"t.json", "t.json.gz", "t.pftrace", "t.db"}) {
    std::string out, err, path = root_ + "/" + name;
    ASSERT_EQ(RunArgs({"export", capture_, "-o", path}, &out, &err), kExitOk) << err;
    EXPECT_TRUE(fs::exists(path)) << name;
    EXPECT_NE(out.find("3 events from 1 capture"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
  }
  std::ifstream in(root_ + "/t.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"name\":\"actor_update\""), std::string::npos);
  EXPECT_NE(text.find("\"role\":\"actor\""), std::string::npos);
}

TEST_F(ExportCommandTest, ExplicitFormatOverridesTheExtensionAndJsonOutputReportsCounts) {
  std::string out, err, path = root_ + "/trace.bin";
  ASSERT_EQ(RunArgs({"export", capture_ + "/events.rlp", "--format", "pftrace", "-o", path, "--json"},
                    &out, &err),
            kExitOk)
      << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["format"], "pftrace") << out;
  EXPECT_EQ(j["events"], 3) << out;
  EXPECT_EQ(j["captures"], 1) << out;
  EXPECT_TRUE(j["diagnostics"].is_object()) << out;  // the sink: {name: count}
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(in.get(), 0x0A);  // Trace.packet
}

TEST_F(ExportCommandTest, ABareEventsFileIsExportedWithADiagnostic) {
  fs::copy_file(capture_ + "/events.rlp", root_ + "/alone.rlp");
  std::string out, err;
  ASSERT_EQ(RunArgs({"export", root_ + "/alone.rlp", "-o", root_ + "/alone.json"}, &out, &err),
            kExitOk)
      << err;
  EXPECT_NE(out.find("3 events"), std::string::npos) << out;
  EXPECT_EQ(out.find("diagnostic:"), std::string::npos) << out;  // a bare file is fine
}

// Issue 35: export said "diagnostics: none" for a capture that lost events to a full disk and
// was never closed (SIGKILL), where summary named both.
TEST_F(ExportCommandTest, WhatTheCaptureLostIsSaidAsSummarySaysIt) {
  std::ofstream(capture_ + "/manifest.json", std::ios::trunc)
      << R"({"format": "rlprof-capture", "format_version": 1, "run_id": "run1",
             "scope": "e2e", "identity": {"rank": 0, "host": "h", "pid": 77},
             "counts": {"events": 3, "dropped_events": 5, "dropped_write_error": 4},
             "complete": false})";
  std::string out, err;
  ASSERT_EQ(RunArgs({"export", capture_, "-o", root_ + "/lost.json", "--json"}, &out, &err), kExitOk) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["diagnostics"]["dropped_events"], 5) << out;
  EXPECT_EQ(j["diagnostics"]["events_lost_write_error"], 4) << out;
  EXPECT_EQ(j["diagnostics"]["capture_incomplete"], 1) << out;
  std::string text_out;
  ASSERT_EQ(RunArgs({"export", capture_, "-o", root_ + "/lost.pftrace"}, &text_out, &err), kExitOk) << err;
  EXPECT_NE(text_out.find("dropped_events"), std::string::npos) << text_out;
  EXPECT_NE(text_out.find("events_lost_write_error"), std::string::npos) << text_out;
}

TEST_F(ExportCommandTest, ExportsATreeOfCaptures) {
  std::string out, err;
  ASSERT_EQ(RunArgs({"export", root_ + "/run1", "-o", root_ + "/all.db"}, &out, &err), kExitOk)
      << err;
  EXPECT_NE(out.find("from 1 capture"), std::string::npos) << out;
}

TEST_F(ExportCommandTest, ConvertsAKinetoTraceAndRejectsATextFileThatIsNoTrace) {
  std::string out, err;
  const std::string kineto =
      std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/tracelens_h100_falconsai.json.gz";
  ASSERT_EQ(RunArgs({"export", kineto, "-o", root_ + "/k.pftrace", "--json"}, &out, &err), kExitOk)
      << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["captures"], 1) << out;
  // The reader's diagnostics of the converted trace are the export's too.
  EXPECT_TRUE(j["diagnostics"].is_object()) << out;
  EXPECT_GT(std::filesystem::file_size(root_ + "/k.pftrace"), 10000u);
  { std::ofstream(root_ + "/notes.json") << "hello"; }
  EXPECT_EQ(RunArgs({"export", root_ + "/notes.json", "-o", root_ + "/n.pftrace"}, &out, &err),
            kExitBadInput);
  EXPECT_NE(err.find("not a JSON trace"), std::string::npos) << err;
}

TEST_F(ExportCommandTest, MissingInputIsExitTwoWithThePath) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"export", root_ + "/nope", "-o", root_ + "/t.json"}, &out, &err),
            kExitBadInput);
  EXPECT_NE(err.find(root_ + "/nope"), std::string::npos) << err;
}

TEST_F(ExportCommandTest, UnwritableOutputIsExitFour) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"export", capture_, "-o", root_ + "/no/such/dir/t.json"}, &out, &err),
            kExitOutputError);
  EXPECT_NE(err.find("t.json"), std::string::npos) << err;
}

TEST_F(ExportCommandTest, UnknownExtensionWithoutFormatIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"export", capture_, "-o", root_ + "/t.txt"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("--format"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlprof::cli

namespace rlprof::cli {
namespace {

// The merged run timeline's level of detail from the command line: the user mark (detail) is
// left out everywhere but the ranks and steps asked for; step and stage ranges stay.
TEST_F(ExportCommandTest, LevelOfDetailFlagsKeepStagesAndLeaveOutTheRest) {
  std::string out, err, path = root_ + "/run.json";
  ASSERT_EQ(RunArgs({"export", root_ + "/run1", "-o", path, "--stages-only", "--json"}, &out, &err),
            kExitOk) << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["source_events"], 3);
  EXPECT_EQ(j["events"], 2);
  EXPECT_EQ(j["left_out_by_detail"], 1);
  // Rank 0 asked for (steps: all): everything kept.
  ASSERT_EQ(RunArgs({"export", root_ + "/run1", "-o", path, "--detail-ranks", "0,3", "--json"}, &out, &err),
            kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["left_out_by_detail"], 0);
  // Rank 0 but another step: the mark (inside step 2) goes.
  ASSERT_EQ(RunArgs({"export", root_ + "/run1", "-o", path, "--detail-ranks", "0", "--detail-steps", "5"}, &out, &err),
            kExitOk) << err;
  EXPECT_NE(out.find("level of detail: stages of every rank; 1 "), std::string::npos) << out;
}

}  // namespace
}  // namespace rlprof::cli
