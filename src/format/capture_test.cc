#include "src/format/capture.h"

#include <gtest/gtest.h>

#include "src/base/files.h"
#include "src/format/sample_capture.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

TEST(CaptureTest, LoadsADirectoryWithManifestAndSortedEvents) {
  std::string dir = TestDir() + "/run/step2/e2e/rank0-node-a-4100";
  Capture src = SampleCaptures()[0];
  std::reverse(src.raw.events.begin(), src.raw.events.end());  // written out of order
  ASSERT_TRUE(WriteSampleCaptureDir(dir, src).ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->has_manifest);
  EXPECT_TRUE(c->diagnostics.empty()) << c->diagnostics.front();
  EXPECT_EQ(c->manifest.rank, 0);
  EXPECT_EQ(c->manifest.host, "node-a");
  EXPECT_EQ(c->manifest.pid, 4100);
  EXPECT_EQ(c->manifest.run_id, "20261122-051500-golden");
  EXPECT_EQ(c->manifest.realtime_anchor_ns, 1'767'225'600'000'000'000);
  EXPECT_EQ(c->manifest.roles, (std::vector<std::string>{"actor", "rollout"}));
  EXPECT_FALSE(c->manifest.replica.has_value());
  ASSERT_EQ(c->raw.events.size(), src.raw.events.size());
  for (size_t i = 1; i < c->raw.events.size(); ++i) {
    EXPECT_LE(c->raw.events[i - 1].ts_ns, c->raw.events[i].ts_ns);
  }
  // At equal times the longer slice (the parent) comes first.
  EXPECT_EQ(c->raw.str(c->raw.events[0].name), "rl/step");
  EXPECT_EQ(c->Label(), "rank 0 [actor] node-a (pid 4100)");
}

TEST(CaptureTest, AnEventsFileInACaptureDirectoryUsesItsManifest) {
  std::string dir = TestDir();
  Capture src = SampleCaptures()[1];
  src.manifest.run_id = "from-manifest";
  ASSERT_TRUE(WriteSampleCaptureDir(dir, src).ok());
  auto c = LoadCapture(dir + "/events.rlp");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->has_manifest);
  EXPECT_EQ(c->dir, dir);
  EXPECT_EQ(c->manifest.run_id, "from-manifest");
}

TEST(CaptureTest, LoadsABareEventsFile) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir + "/cap", SampleCaptures()[1]).ok());
  std::filesystem::copy_file(dir + "/cap/events.rlp", dir + "/rank1.rlp");
  auto c = LoadCapture(dir + "/rank1.rlp");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_manifest);
  EXPECT_TRUE(c->diagnostics.empty());
  EXPECT_EQ(c->manifest.rank, 1);  // from the events header
  EXPECT_EQ(c->manifest.host, "node-b");
  EXPECT_EQ(c->raw.events.size(), 3u);
}

TEST(CaptureTest, IllTypedManifestKeysAreDiagnosedNotFatal) {
  std::vector<std::string> diag;
  Manifest m = ParseManifest(
      R"({"run_id": 7, "identity": {"rank": "zero", "host": "h", "pid": 12.0, "replica": 3},
          "steps": [1, "x", 3], "clock": [], "counts": {"events": 1e3}, "complete": "yes"})",
      &diag);
  EXPECT_EQ(m.run_id, "");
  EXPECT_EQ(m.rank, -1);
  EXPECT_EQ(m.host, "h");
  EXPECT_EQ(m.pid, 12);
  EXPECT_EQ(m.replica, 3);
  EXPECT_EQ(m.steps, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(m.event_count, 1000);
  ASSERT_EQ(diag.size(), 5u);
  EXPECT_EQ(diag[0], "manifest.json: run_id: expected a string");
  EXPECT_EQ(diag[1], "manifest.json: steps: expected a list of integers");
  EXPECT_EQ(diag[2], "manifest.json: identity.rank: expected an integer");
}

// What a full disk cost (counts.dropped_write_error), from a manifest the runtime rewrote in
// place over its padded open-time version (trailing whitespace).
TEST(CaptureTest, ReadsTheEventsLostToAWriteErrorFromAPaddedManifest) {
  std::vector<std::string> diag;
  Manifest m = ParseManifest(R"({"counts": {"events": 10, "dropped_events": 7, "dropped_buffer_full": 2,
      "dropped_budget": 0, "dropped_write_error": 5}, "complete": false})" +
                                 std::string(4096, ' ') + "\n",
                             &diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(m.event_count, 10);
  EXPECT_EQ(m.dropped_events, 7);
  EXPECT_EQ(m.dropped_write_error, 5);
  EXPECT_FALSE(m.complete);
}

TEST(CaptureTest, BrokenManifestJsonStillLoadsTheEvents) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir, SampleCaptures()[0]).ok());
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/manifest.json", "{\"run_id\": \"x\", ").ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->diagnostics.size(), 1u);
  EXPECT_NE(c->diagnostics[0].find("not a JSON object"), std::string::npos);
  EXPECT_EQ(c->manifest.host, "node-a");
  EXPECT_EQ(c->raw.events.size(), SampleCaptures()[0].raw.events.size());
}

TEST(CaptureTest, DamagedEventsAreSummarisedInDiagnostics) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir, SampleCaptures()[0]).ok());
  auto bytes = base::ReadFile(dir + "/events.rlp");
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/events.rlp", bytes->substr(0, bytes->size() - 7)).ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->diagnostics.size(), 1u);
  EXPECT_NE(c->diagnostics[0].find("truncated tail"), std::string::npos);
}

TEST(CaptureTest, MissingPathsAreNotFound) {
  std::string dir = TestDir();
  auto missing = LoadCapture(dir + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), base::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir + "/nope"), std::string::npos);
  auto empty = LoadCapture(dir);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), base::StatusCode::kNotFound);
  EXPECT_FALSE(LoadCaptureTree(dir).ok());
}

TEST(CaptureTest, LoadsEveryCaptureOfATreeSortedByRank) {
  std::string root = TestDir();
  auto caps = SampleCaptures();
  ASSERT_TRUE(WriteSampleCaptureDir(root + "/r/step2/e2e/rank1-node-b-4100", caps[1]).ok());
  ASSERT_TRUE(WriteSampleCaptureDir(root + "/r/step2/e2e/rank0-node-a-4100", caps[0]).ok());
  ASSERT_TRUE(base::MakeDirs(root + "/r/step2/e2e/empty-dir").ok());
  // A directory whose events file is not an rlprof file: reported, not fatal.
  ASSERT_TRUE(base::MakeDirs(root + "/r/step3/e2e/rank0-x").ok());
  ASSERT_TRUE(base::WriteFileAtomic(root + "/r/step3/e2e/rank0-x/events.rlp", "garbage").ok());
  EXPECT_EQ(FindCaptureDirs(root).size(), 3u);
  auto set = LoadCaptureTree(root + "/r");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->captures.size(), 2u);
  EXPECT_EQ(set->captures[0].manifest.rank, 0);
  EXPECT_EQ(set->captures[1].manifest.rank, 1);
  ASSERT_EQ(set->diagnostics.size(), 1u);
  EXPECT_NE(set->diagnostics[0].find("rank0-x"), std::string::npos);
}

}  // namespace
}  // namespace rlprof::format
