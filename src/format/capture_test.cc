#include "src/format/capture.h"

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>

#include "src/base/files.h"
#include "src/base/time_math.h"
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
  EXPECT_TRUE(c->diagnostics.empty()) << ::testing::PrintToString(c->diagnostics.Lines());
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
  EXPECT_EQ(diag[0], "manifest.json: run_id: expected a string, got 7");
  EXPECT_EQ(diag[1], "manifest.json: steps: expected a list of integers, got [1,\"x\",3]");
  EXPECT_EQ(diag[2], "manifest.json: identity.rank: expected an integer, got \"zero\"");
}

// Issue 35: negative counts, fractional ranks and an empty counts object were accepted without
// the manifest_problems note docs/formats.md promises.
TEST(CaptureTest, OutOfRangeAndMissingManifestCountsAreNoted) {
  std::vector<std::string> diag;
  Manifest m = ParseManifest(R"({"identity": {"rank": 1.5, "world_size": -2, "pid": -7},
      "counts": {"events": -3, "dropped_events": -1, "threads": 2}, "complete": true})",
                             &diag);
  EXPECT_EQ(m.rank, -1);
  EXPECT_EQ(m.world_size, 0);
  EXPECT_EQ(m.event_count, 0);
  EXPECT_EQ(m.dropped_events, 0);
  EXPECT_EQ(m.threads, 2);
  ASSERT_EQ(diag.size(), 5u) << ::testing::PrintToString(diag);
  EXPECT_EQ(diag[0], "manifest.json: identity.rank: expected an integer, got 1.5");
  EXPECT_EQ(diag[1], "manifest.json: identity.world_size: expected a non-negative integer, got -2");
  EXPECT_EQ(diag[3], "manifest.json: counts.events: expected a non-negative integer, got -3");
  diag.clear();
  ParseManifest(R"({"identity": {"rank": -5}, "counts": {}, "complete": true})", &diag);
  ASSERT_EQ(diag.size(), 2u) << ::testing::PrintToString(diag);
  EXPECT_EQ(diag[0], "manifest.json: identity.rank: expected an integer ≥ -1, got -5");
  EXPECT_EQ(diag[1], "manifest.json: counts.events: missing");
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
  EXPECT_EQ(c->diagnostics.Get("manifest_problems"), 1u);
  ASSERT_EQ(c->diagnostics.details.size(), 1u);
  EXPECT_NE(c->diagnostics.details[0].find("not a JSON object"), std::string::npos);
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
  EXPECT_GE(c->diagnostics.Get("raw_truncated_tail_bytes"), 7u);  // the whole torn chunk
  // The events the torn chunk held are missing against the manifest's count, too.
  EXPECT_GT(c->diagnostics.Get("manifest_event_count_mismatch"), 0u);
  bool summarised = false;
  for (const auto& d : c->diagnostics.details) summarised = summarised || d.find("truncated tail") != std::string::npos;
  EXPECT_TRUE(summarised) << ::testing::PrintToString(c->diagnostics.details);
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
  EXPECT_EQ(set->diagnostics.Get("unreadable_inputs"), 1u);
  ASSERT_EQ(set->diagnostics.details.size(), 1u);
  EXPECT_NE(set->diagnostics.details[0].find("rank0-x"), std::string::npos);
}

// Issue 10: a capture whose events.rlp is a directory aborted every command with
// std::bad_alloc (fopen succeeds on a directory; its "size" is LONG_MAX).
TEST(CaptureTest, AnEventsFileThatIsADirectoryLosesOnlyTheEvents) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir, SampleCaptures()[0]).ok());
  std::filesystem::remove(dir + "/events.rlp");
  ASSERT_TRUE(base::MakeDirs(dir + "/events.rlp").ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->diagnostics.Get("raw_events_unreadable"), 1u);
  EXPECT_TRUE(c->raw.events.empty());
  EXPECT_EQ(c->manifest.host, "node-a");  // the manifest is the partial result
  // Alone (no manifest to fall back on) it is an error, not an abort.
  auto raw = ReadRaw(dir + "/events.rlp");
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("directory"), std::string::npos);
}

TEST(CaptureTest, ZeroLengthEventsAndUnreadableManifestsAreNamed) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir + "/empty", SampleCaptures()[0]).ok());
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/empty/events.rlp", "").ok());
  auto c = LoadCapture(dir + "/empty");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->diagnostics.Get("raw_empty_file"), 1u);
  EXPECT_EQ(c->diagnostics.Get("raw_bad_header"), 0u);
  // Only the magic (killed while writing the header), with and without a manifest.
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/empty/events.rlp", std::string("RLPROF\0\1", 8)).ok());
  c = LoadCapture(dir + "/empty");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->diagnostics.Get("raw_truncated_tail_bytes"), 8u);
  std::filesystem::remove(dir + "/empty/manifest.json");
  c = LoadCapture(dir + "/empty");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->raw.events.empty());

  ASSERT_TRUE(WriteSampleCaptureDir(dir + "/mdir", SampleCaptures()[0]).ok());
  std::filesystem::remove(dir + "/mdir/manifest.json");
  ASSERT_TRUE(base::MakeDirs(dir + "/mdir/manifest.json").ok());
  auto m = LoadCapture(dir + "/mdir");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->diagnostics.Get("manifest_unreadable"), 1u);
  EXPECT_FALSE(m->has_manifest);
  EXPECT_EQ(m->raw.events.size(), SampleCaptures()[0].raw.events.size());

  ASSERT_TRUE(WriteSampleCaptureDir(dir + "/nomanifest", SampleCaptures()[0]).ok());
  std::filesystem::remove(dir + "/nomanifest/manifest.json");
  auto n = LoadCapture(dir + "/nomanifest");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->diagnostics.Get("manifest_missing"), 1u);
}

// A flipped version byte is damage to the header: the checksum tells; the chunks are kept.
TEST(CaptureTest, AFlippedVersionByteLosesOnlyTheHeader) {
  std::string dir = TestDir();
  ASSERT_TRUE(WriteSampleCaptureDir(dir, SampleCaptures()[0]).ok());
  auto bytes = base::ReadFile(dir + "/events.rlp");
  ASSERT_TRUE(bytes.ok());
  std::string damaged = *bytes;
  damaged[8] = static_cast<char>(0x7f);  // version u32 at offset 8
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/events.rlp", damaged).ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->diagnostics.Get("raw_bad_header"), 1u);
  EXPECT_EQ(c->raw.events.size(), SampleCaptures()[0].raw.events.size());
}

TEST(CaptureTest, ManifestEventCountsAreCheckedAgainstTheFile) {
  std::string dir = TestDir();
  Capture src = SampleCaptures()[0];
  ASSERT_TRUE(WriteSampleCaptureDir(dir, src).ok());
  auto text = base::ReadFile(dir + "/manifest.json");
  ASSERT_TRUE(text.ok());
  const std::string was = "\"events\": " + std::to_string(src.raw.events.size());
  const size_t at = text->find(was);
  ASSERT_NE(at, std::string::npos) << *text;
  std::string changed = *text;
  changed.replace(at, was.size(), "\"events\": " + std::to_string(src.raw.events.size() + 5));
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/manifest.json", changed).ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->diagnostics.Get("manifest_event_count_mismatch"), 5u);
  // The files it lists: one missing, one of another size.
  const std::string files = "\"files\": [";
  const size_t f = changed.find(files);
  ASSERT_NE(f, std::string::npos);
  changed.insert(f + files.size(), "{\"name\": \"gone.bin\", \"bytes\": 3}, {\"name\": \"events.rlp\", \"bytes\": 1}, ");
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/manifest.json", changed).ok());
  c = LoadCapture(dir);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->diagnostics.Get("manifest_listed_file_missing"), 1u);
  EXPECT_EQ(c->diagnostics.Get("manifest_file_size_mismatch"), 1u);
}

// Hostile clocks: anchors and offsets of ±INT64_MAX, an inverted window, events at the edges
// of int64. Everything out of range is dropped or clamped, and counted.
TEST(CaptureTest, HostileTimesAreClampedOrDroppedAndCounted) {
  Capture c = SampleCaptures()[0];
  const size_t n = c.raw.events.size();
  c.manifest.offset_to_rank0_ns = INT64_MAX;
  c.manifest.monotonic_anchor_ns = INT64_MIN;
  c.manifest.window_open_ns = 2000;
  c.manifest.window_close_ns = 1000;
  Event late = c.raw.events[0];
  late.ts_ns = INT64_MAX;
  Event early = late;
  early.ts_ns = INT64_MIN;
  Event longest = c.raw.events[0];
  longest.kind = EventKind::kComplete;
  longest.ts_ns = 5;
  longest.payload = INT64_MAX;
  c.raw.events.push_back(late);
  c.raw.events.push_back(early);
  c.raw.events.push_back(longest);
  SanitizeCaptureTimes(&c);
  EXPECT_EQ(c.diagnostics.Get("clock_offset_out_of_range"), 2u);
  EXPECT_EQ(c.manifest.offset_to_rank0_ns, 0);
  EXPECT_EQ(c.diagnostics.Get("window_inverted"), 1u);
  EXPECT_EQ(c.manifest.window_open_ns, 0);
  EXPECT_EQ(c.diagnostics.Get("time_out_of_range"), 2u);
  EXPECT_EQ(c.diagnostics.Get("duration_clamped"), 1u);
  EXPECT_EQ(c.raw.events.size(), n + 1);
  for (const Event& e : c.raw.events) {
    EXPECT_TRUE(base::IsValidTime(e.ts_ns));
    if (e.kind == EventKind::kComplete) EXPECT_TRUE(base::IsValidTime(e.ts_ns + e.payload));
  }
  EXPECT_TRUE(c.times_checked);
}

// A name of 3 MiB (a stand-in for a hostile 1 GB one) is cut to 1 MiB when read, and counted.
TEST(CaptureTest, LongNamesAreTruncatedWhenRead) {
  std::string dir = TestDir();
  Capture src = SampleCaptures()[1];
  src.raw.strings[src.raw.events[0].name] = std::string(3 << 20, 'n');
  ASSERT_TRUE(WriteSampleCaptureDir(dir, src).ok());
  auto c = LoadCapture(dir);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->raw.str(c->raw.events[0].name).size(), kRawMaxStringBytes);
  EXPECT_EQ(c->diagnostics.Get("name_truncated"), 1u);
}

}  // namespace
}  // namespace rlprof::format
