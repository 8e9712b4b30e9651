// Hostile inputs (test/data/hostile, issue 10 "Never crash, never silent"): every reader, the
// analysis and every writer take them without crashing, overflowing or losing data silently.
// Run under the asan preset (UBSan aborts on signed overflow) this is the overflow check too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/run/to_capture.h"
#include "src/base/files.h"
#include "src/base/time_math.h"
#include "src/format/chrome_json.h"
#include "src/format/export.h"
#include "src/format/perfetto_trace.h"
#include "src/format/sample_capture.h"
#include "src/format/sqlite_export.h"
#include "src/format/test_util.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

std::string Hostile(const std::string& name) {
  return std::string(RLPROF_SOURCE_DIR) + "/test/data/hostile/" + name;
}

// Reads, analyses and exports to every format; returns the trace.
Trace ReadAnalyseExport(const std::string& path) {
  auto t = ReadTrace(path);
  EXPECT_TRUE(t.ok()) << path << ": " << t.status().ToString();
  if (!t.ok()) return Trace();
  for (size_t i = 0; i < t->size(); ++i) {
    EXPECT_TRUE(base::IsValidTime(t->ts[i])) << path << " row " << i;
    EXPECT_TRUE(base::IsValidTime(t->ts[i] + t->dur[i])) << path << " row " << i;
    EXPECT_GE(t->dur[i], 0);
  }
  const Classifier cls = Classifier::Default();
  for (AssignMode mode : {AssignMode::kClip, AssignMode::kByStart, AssignMode::kByLaunch}) {
    for (CompatMode compat : {CompatMode::kNative, CompatMode::kHta}) {
      AnalysisOptions opts;
      opts.assign = mode;
      opts.compat = compat;
      opts.activity_spans = mode == AssignMode::kByStart ? 3 : 0;  // the report's lanes, coarse
      TraceAnalysis a = AnalyseTrace(*t, cls, opts);
      for (const auto& l : a.activity)
        for (const auto& s : l.spans) EXPECT_TRUE(s.start <= s.end && s.busy >= 0 && s.busy <= s.end - s.start) << path;
      for (const auto& [k, v] : a.diagnostics.counts)
        EXPECT_NE(k.rfind("invariant_", 0), 0u) << path << ": " << k << "=" << v;
    }
  }
  std::vector<format::Capture> caps{CaptureFromTrace(*t, cls)};
  format::StringSink json, proto;
  format::WriteChromeJson(caps, &json);
  format::WritePerfetto(caps, &proto);
  const std::string db =
      (fs::temp_directory_path() / ("rlprof_hostile_" + std::to_string(::getpid()) + ".db")).string();
  auto s = format::WriteSqliteFile(caps, db);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  fs::remove(db);
  return std::move(*t);
}

// Issue 10, first finding: one flow point on a thread with no slices crashed every command.
TEST(HostileInputs, FlowPointsWithoutSlicesAreUnboundNotFatal) {
  Trace a = ReadAnalyseExport(Hostile("flow_start_alone.json"));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.diagnostics.Get("flow_unbound"), 1u);
  Trace b = ReadAnalyseExport(Hostile("flow_end_alone.json"));
  EXPECT_EQ(b.diagnostics.Get("flow_unbound"), 1u);
  Trace c = ReadAnalyseExport(Hostile("flow_steps_alone.json"));
  EXPECT_EQ(c.diagnostics.Get("flow_unbound"), 2u);
}

TEST(HostileInputs, LoneInstantsCountersAndEmptyThreadsAreTraces) {
  Trace i = ReadAnalyseExport(Hostile("instant_alone.json"));
  EXPECT_EQ(i.size(), 1u);
  Trace c = ReadAnalyseExport(Hostile("counter_alone.json"));
  EXPECT_EQ(c.counters.size(), 1u);
  Trace e = ReadAnalyseExport(Hostile("empty_thread.json"));
  EXPECT_EQ(e.size(), 0u);
  Trace n = ReadAnalyseExport(Hostile("no_events.json"));
  EXPECT_EQ(n.size(), 0u);
}

// Timestamps of INT64_MAX / INT64_MIN / ±1e300 / NaN are dropped, durations past 2^62 ns
// clamped, negative ones zeroed: every case counted, nothing overflows downstream.
TEST(HostileInputs, HostileTimesAreDroppedOrClampedAndCounted) {
  Trace t = ReadAnalyseExport(Hostile("hostile_times.json"));
  EXPECT_EQ(t.diagnostics.Get("invalid_ts"), 8u);  // seven ranges and one counter
  EXPECT_EQ(t.diagnostics.Get("invalid_dur"), 2u);  // INT64_MAX µs and 1e300 µs
  EXPECT_EQ(t.diagnostics.Get("negative_duration"), 1u);
  EXPECT_GE(t.diagnostics.Get("duration_clamped"), 1u);  // kernel_late ends past 2^62 ns
  std::set<std::string> names;
  for (size_t i = 0; i < t.size(); ++i) names.insert(t.str(t.name[i]));
  EXPECT_FALSE(names.count("ts_int64_max"));
  EXPECT_FALSE(names.count("ts_nan"));
  EXPECT_TRUE(names.count("dur_int64_max"));  // kept with dur 0
  EXPECT_TRUE(names.count("begin_far_past"));  // a B/E pair 2^63 ns long is fine
  EXPECT_EQ(t.steps.size(), 2u);
}

// "name": null named nothing and lost the steps it named without a word.
TEST(HostileInputs, NullNamesAreCounted) {
  Trace t = ReadAnalyseExport(Hostile("null_names.json"));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.diagnostics.Get("missing_name"), 3u);
}

// Issue 35: "traceEvents" twice. The last array is what Python, Chrome and Perfetto read; the
// events of the first are counted as left out.
TEST(HostileInputs, DuplicateTraceEventsKeysReadTheLastAndCountTheRest) {
  Trace t = ReadAnalyseExport(Hostile("duplicate_trace_events.json"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.str(t.name[0]), "last_a");
  EXPECT_EQ(t.diagnostics.Get("duplicate_trace_events"), 2u);
  ASSERT_FALSE(t.diagnostics.details.empty());
  EXPECT_NE(t.diagnostics.details[0].find("appears 2 times"), std::string::npos) << t.diagnostics.details[0];
}

// Every file of the hostile folder is covered by a test above (a new file needs one).
TEST(HostileInputs, EveryHostileFileIsRead) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(Hostile(""))) {
    if (e.path().extension() != ".json") continue;
    ReadAnalyseExport(e.path().string());
    ++n;
  }
  EXPECT_EQ(n, 10u);
}

// Capture-level hostility through the analysis readers: an events.rlp that is a directory,
// inverted windows, offsets of INT64_MAX: a partial trace and named diagnostics.
TEST(HostileInputs, AnAscendTextFolderWithBrokenFilesIsAPartialTrace) {
  // kernel_details.csv with a start that is no number, a row cut short, a negative duration and
  // an unterminated quote; communication.json cut by a killed writer (test/data/ascend_text).
  Trace t = ReadAnalyseExport(std::string(RLPROF_SOURCE_DIR) +
                              "/test/data/ascend_text/damaged/node-a_41002_20251126094000123_ascend_pt");
  EXPECT_GT(t.size(), 0u);
  EXPECT_EQ(t.diagnostics.Get("ascend_text_bad_row"), 3u);
  EXPECT_EQ(t.diagnostics.Get("ascend_text_corrupt"), 1u);
}

TEST(HostileInputs, HostileCapturesGivePartialTraces) {
  const std::string dir = format::TestDir();
  format::Capture c = format::SampleCaptures()[0];
  ASSERT_TRUE(format::WriteSampleCaptureDir(dir + "/evdir", c).ok());
  fs::remove(dir + "/evdir/events.rlp");
  fs::create_directories(dir + "/evdir/events.rlp");
  auto t = ReadTrace(dir + "/evdir");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->diagnostics.Get("raw_events_unreadable"), 1u);
  AnalyseTrace(*t, Classifier::Default(), {});

  // In memory (not through LoadCapture): TraceFromCapture checks the times itself.
  format::Capture h = format::SampleCaptures()[1];
  h.manifest.offset_to_rank0_ns = INT64_MAX;
  h.manifest.window_open_ns = 100;
  h.manifest.window_close_ns = 50;
  h.raw.events[0].ts_ns = INT64_MAX - 3;
  h.raw.events[1].payload = INT64_MAX;
  ASSERT_TRUE(format::WriteSampleCaptureDir(dir + "/times", h).ok());
  Trace ht = ReadAnalyseExport(dir + "/times");
  EXPECT_EQ(ht.diagnostics.Get("time_out_of_range"), 1u);
  EXPECT_EQ(ht.diagnostics.Get("duration_clamped"), 1u) << ::testing::PrintToString(ht.diagnostics.Lines());
}

// A trace whose events.rlp-less folders, empty files and unreadable folders used to be
// skipped without a word: FindTraceInputs counts each with its path.
TEST(HostileInputs, FindingInputsNamesWhatItSkips) {
  const std::string dir = format::TestDir();
  fs::create_directories(dir + "/run/a");
  { std::ofstream(dir + "/run/a/empty.json"); }
  fs::copy_file(Hostile("instant_alone.json"), dir + "/run/a/ok.json");
  format::Capture c = format::SampleCaptures()[1];
  ASSERT_TRUE(format::WriteSampleCaptureDir(dir + "/run/nomanifest", c).ok());
  fs::remove(dir + "/run/nomanifest/manifest.json");
  fs::create_directories(dir + "/run/locked/inner");
  fs::copy_file(Hostile("instant_alone.json"), dir + "/run/locked/inner/t.json");
  fs::create_symlink(dir + "/run/nowhere", dir + "/run/dangling.json");  // a link to nothing
  fs::permissions(dir + "/run/locked", fs::perms::none);
  const bool can_lock = !std::ifstream(dir + "/run/locked/inner/t.json");  // root reads anyway
  Diagnostics d;
  auto inputs = FindTraceInputs({dir + "/run"}, &d);
  fs::permissions(dir + "/run/locked", fs::perms::owner_all);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  EXPECT_EQ(d.Get("input_empty_file"), 1u);
  EXPECT_EQ(d.Get("input_events_without_manifest"), 1u);
  EXPECT_EQ(d.Get("input_unreadable_file"), 1u);  // the dangling link
  if (can_lock) EXPECT_EQ(d.Get("input_unreadable_dir"), 1u);
  EXPECT_EQ(inputs->size(), can_lock ? 2u : 3u);  // ok.json and the bare events.rlp
  bool mentions_empty = false;
  for (const auto& s : d.details) mentions_empty = mentions_empty || s.find("empty.json") != std::string::npos;
  EXPECT_TRUE(mentions_empty);
}

// Issue 10: a 1 GB name was copied into every table. A 50 MB one is cut to 1 MiB when read,
// counted, and reading it takes no more than twice the input in memory.
TEST(HostileInputs, AHugeNameIsTruncatedAndMemoryStaysWithinTwiceTheInput) {
  const std::string dir = format::TestDir();
  const std::string path = dir + "/huge_name.json";
  const size_t kName = 50u << 20;
  {
    std::ofstream f(path, std::ios::binary);
    f << R"({"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":")";
    std::string chunk(1 << 20, 'x');
    for (size_t i = 0; i < kName / chunk.size(); ++i) f << chunk;
    f << R"("},{"ph":"X","pid":1,"tid":1,"ts":5,"dur":2,"name":"small"}]})";
  }
  const auto file_bytes = static_cast<int64_t>(fs::file_size(path));
  auto kb = [](const char* key) -> int64_t {
    std::ifstream s("/proc/self/status");
    std::string line;
    while (std::getline(s, line))
      if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::string(key).size()));
    return -1;
  };
  // Reset the peak to the current size (Linux ≥ 4.0), so that the peak below is this read's.
  const bool peak_reset = static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5");
  const int64_t before = kb("VmRSS:");
  auto t = ReadTrace(path);
  const int64_t peak = kb("VmHWM:");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ(t->str(t->name[0]).size(), 1u << 20);
  EXPECT_EQ(t->diagnostics.Get("name_truncated"), 1u);
  if (peak_reset && before > 0 && peak > 0) {
    EXPECT_LE((peak - before) * 1024, 2 * file_bytes)
        << "reading a " << file_bytes << "-byte trace raised the peak RSS by " << (peak - before) << " KiB";
  }
}

}  // namespace
}  // namespace rlprof::analysis
