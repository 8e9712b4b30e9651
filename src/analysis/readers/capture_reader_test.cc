#include "src/analysis/readers/capture_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/format/raw.h"
#include "src/format/test_util.h"

namespace rlprof::analysis {
namespace {

using format::Category;
using format::Event;
using format::EventKind;

Event Ev(int64_t ts, int64_t payload, uint32_t name, uint16_t track, EventKind k, Category c,
         uint32_t a0 = 0, uint32_t a1 = 0) {
  Event e{};
  e.ts_ns = ts;
  e.payload = payload;
  e.name = name;
  e.track = track;
  e.kind = k;
  e.category = c;
  e.arg0 = a0;
  e.arg1 = a1;
  return e;
}

// A capture of rank 1 (of 4) with a step, a stage, operators, a collective, a kernel, a
// cross-thread async range, an instant, counters and one begin without end.
std::string WriteCapture(const std::string& dir, bool truncate) {
  std::filesystem::create_directories(dir);
  auto w = format::RawWriter::Create(dir + "/events.rlp", {.rank = 1, .pid = 4242, .host = "node-b"});
  EXPECT_TRUE(w.ok());
  std::vector<format::StringEntry> s = {{1, "rl/step"},        {2, "actor_update"}, {3, "actor"},
                                        {4, "aten::mm"},       {5, "[[2,3],[3,4]]"}, {6, "allreduce"},
                                        {7, "tp_group"},       {8, "gemm_kernel"},  {9, "h2d"},
                                        {10, "load"},          {11, "mark"},        {12, "allocated"},
                                        {13, "never_ends"}};
  EXPECT_TRUE((*w)->AddStrings(s).ok());
  std::vector<format::TrackEntry> tracks = {
      {1, format::TrackKind::kThread, 100, 4242, "main"},
      {2, format::TrackKind::kThread, 101, 4242, "worker"},
      {3, format::TrackKind::kDeviceStream, (uint64_t{0} << 32) | 7, 4242, "stream 7"},
      {4, format::TrackKind::kCounter, 0, 4242, "allocated"}};
  EXPECT_TRUE((*w)->AddTracks(tracks).ok());
  Event counter = Ev(1500, 0, 12, 4, EventKind::kCounter, Category::kMemory);
  counter.set_counter_value(2.5e9);
  std::vector<Event> ev = {
      Ev(1000, 10000, 1, 1, EventKind::kComplete, Category::kStep, 5),
      Ev(1100, 8000, 2, 1, EventKind::kComplete, Category::kStage, 0, 3),
      Ev(1200, 500, 4, 1, EventKind::kComplete, Category::kOperator, 17, 5),
      Ev(2000, 900, 6, 1, EventKind::kComplete, Category::kCommunication, 4096, 7),
      Ev(2100, 300, 8, 3, EventKind::kComplete, Category::kKernel, 99),
      Ev(2500, 0, 9, 3, EventKind::kComplete, Category::kMemcpy, 1024, 9),
      Ev(3000, 55, 10, 1, EventKind::kBegin, Category::kUser),
      Ev(3700, 55, 10, 2, EventKind::kEnd, Category::kUser),
      Ev(4000, 0, 11, 2, EventKind::kInstant, Category::kUser),
      Ev(4100, 56, 13, 2, EventKind::kBegin, Category::kUser),
      counter,
  };
  EXPECT_TRUE((*w)->AddEvents(ev).ok());
  EXPECT_TRUE((*w)->Close().ok());
  std::ofstream(dir + "/manifest.json") << R"({"format": "rlprof-capture", "format_version": 1,
    "run_id": "r1", "scope": "e2e", "mode": "continuous", "steps": [5], "role": "actor",
    "identity": {"rank": 1, "local_rank": 1, "world_size": 4, "host": "node-b", "pid": 4242},
    "counts": {"events": 11, "dropped_events": 3, "threads": 2}, "complete": true})";
  if (truncate) {
    auto size = std::filesystem::file_size(dir + "/events.rlp");
    std::filesystem::resize_file(dir + "/events.rlp", size - 7);
  }
  return dir;
}

TEST(CaptureReader, ReadsAnRlprofCaptureWithMarkersIdentityAndCategories) {
  std::string dir = WriteCapture(format::TestDir() + "/rank1-node-b-4242", false);
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "rlprof");
  EXPECT_EQ(t->rank, 1);
  EXPECT_EQ(t->world_size, 4);
  EXPECT_EQ(t->host, "node-b");
  EXPECT_EQ(t->pid, 4242);
  // step, stage, mm, allreduce, kernel, memcpy, load (begin/end), mark.
  ASSERT_EQ(t->size(), 8u);
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < t->size(); ++i) row[t->str(t->name[i])] = i;
  EXPECT_EQ(t->str(t->category[row["aten::mm"]]), "operator");
  EXPECT_EQ(t->str(t->shapes[row["aten::mm"]]), "[[2,3],[3,4]]");
  EXPECT_EQ(t->str(t->category[row["allreduce"]]), "communication");
  EXPECT_EQ(t->bytes[row["allreduce"]], 4096);
  EXPECT_EQ(t->str(t->group[row["allreduce"]]), "tp_group");
  EXPECT_EQ(t->str(t->category[row["gemm_kernel"]]), "kernel");
  EXPECT_EQ(t->correlation[row["gemm_kernel"]], 99);
  EXPECT_EQ(t->tracks[t->track[row["gemm_kernel"]]].type, TrackType::kDeviceStream);
  EXPECT_EQ(t->tracks[t->track[row["gemm_kernel"]]].stream, 7);
  EXPECT_EQ(t->bytes[row["h2d"]], 1024);
  EXPECT_EQ(t->dur[row["load"]], 700);  // begin on main, end on worker
  EXPECT_EQ(t->tracks[t->track[row["load"]]].name, "main");
  EXPECT_EQ(t->kind[row["mark"]], SliceKind::kInstant);
  ASSERT_EQ(t->steps.size(), 1u);
  EXPECT_EQ(t->steps[0].step, 5);
  EXPECT_EQ(t->steps[0].start_ns, 1000);
  EXPECT_EQ(t->steps[0].end_ns, 11000);
  ASSERT_EQ(t->stages.size(), 1u);
  EXPECT_EQ(t->stages[0].name, "actor_update");
  EXPECT_EQ(t->stages[0].role, "actor");
  EXPECT_EQ(t->stages[0].step, 5);
  ASSERT_EQ(t->counters.size(), 1u);
  EXPECT_EQ(t->counters[0].value, 2.5e9);
  EXPECT_EQ(t->diagnostics.Get("unmatched_begin"), 1u);
  EXPECT_EQ(t->diagnostics.Get("dropped_events"), 3u);
  EXPECT_EQ(t->diagnostics.Get("truncated_input"), 0u);
}

// The window of the manifest bounds the capture: a step still running when it closed is
// flagged partial instead of being averaged with complete steps.
TEST(CaptureReader, SetsTheCaptureBoundsFromTheManifestWindowSoCutStepsArePartial) {
  std::string dir = WriteCapture(format::TestDir() + "/bounded", false);
  std::ofstream(dir + "/manifest.json") << R"({"format": "rlprof-capture", "format_version": 1,
    "run_id": "r1", "scope": "e2e", "mode": "continuous", "steps": [5], "role": "actor",
    "identity": {"rank": 1, "local_rank": 1, "world_size": 4, "host": "node-b", "pid": 4242},
    "window": {"open_ns": 900, "close_ns": 9000, "close_reason": "signal"},
    "counts": {"events": 11, "dropped_events": 0, "threads": 2}, "complete": true})";
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->capture_start_ns, 900);
  EXPECT_EQ(t->capture_end_ns, 9000);
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), AnalysisOptions{});
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_TRUE(a.steps[0].window.partial);
  EXPECT_EQ(a.steps[0].window.partial_reason, "after_capture_end");
}

TEST(CaptureReader, TimesAreAlignedToRankZeroByTheManifestsClockOffset) {
  std::string dir = WriteCapture(format::TestDir() + "/offset", false);
  std::ofstream(dir + "/manifest.json") << R"({"format": "rlprof-capture", "format_version": 1,
    "run_id": "r1", "scope": "e2e", "steps": [5],
    "identity": {"rank": 1, "world_size": 4, "host": "node-b", "pid": 4242},
    "clock": {"offset_to_rank0_ns": -250, "offset_measured": true},
    "window": {"open_ns": 900, "close_ns": 20000}, "complete": true})";
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->steps.size(), 1u);
  EXPECT_EQ(t->steps[0].start_ns, 750);  // 1000 − 250
  EXPECT_EQ(t->capture_start_ns, 650);
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < t->size(); ++i) row[t->str(t->name[i])] = i;
  EXPECT_EQ(t->ts[row["aten::mm"]], 950);
  EXPECT_EQ(t->counters[0].ts_ns, 1250);
}

TEST(CaptureReader, CarriesTheRawReadersTruncationDiagnostics) {
  std::string root = format::TestDir();
  std::string dir = WriteCapture(root + "/cap", true);
  auto t = ReadTrace(dir + "/events.rlp");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rank, 1);
  EXPECT_EQ(t->diagnostics.Get("truncated_input"), 1u);
  EXPECT_GT(t->diagnostics.Get("raw_truncated_tail_bytes"), 0u);
  auto in = FindTraceInputs({root});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(*in, std::vector<std::string>{dir});
}

// CUPTI external correlation: torch operators record their external id ("external_id"
// instants at their begin), launches carry the id pushed when they ran, kernels take it from
// their launch by correlation id: each kernel is attributed to the operator that launched it,
// even where time nesting would say otherwise, and a kernel launched by a communication
// operator is communication.
TEST(CaptureReader, AttributesKernelsToTheOperatorThatPushedTheirExternalId) {
  std::string dir = format::TestDir() + "/xcorr";
  std::filesystem::create_directories(dir);
  auto w = format::RawWriter::Create(dir + "/events.rlp", {.rank = 0, .pid = 7, .host = "h"});
  ASSERT_TRUE(w.ok());
  std::vector<format::StringEntry> s = {{1, "aten::linear"}, {2, "record_param_comms"},
                                        {3, "external_id"},  {4, "cudaLaunchKernel"},
                                        {5, "gemm_kernel"},  {6, "reduce_kernel"},
                                        {7, "aten::mm"}};
  ASSERT_TRUE((*w)->AddStrings(s).ok());
  std::vector<format::TrackEntry> tracks = {
      {1, format::TrackKind::kThread, 10, 7, "main"},
      {2, format::TrackKind::kDeviceStream, (uint64_t{0} << 32) | 7, 7, "stream 7"}};
  ASSERT_TRUE((*w)->AddTracks(tracks).ok());
  std::vector<Event> ev = {
      // aten::linear (id 11) encloses aten::mm (id 12), which launches the GEMM (corr 501).
      Ev(1000, 0, 3, 1, EventKind::kInstant, Category::kCapture, 11),
      Ev(1000, 900, 1, 1, EventKind::kComplete, Category::kOperator),
      Ev(1100, 0, 3, 1, EventKind::kInstant, Category::kCapture, 12),
      Ev(1100, 300, 7, 1, EventKind::kComplete, Category::kOperator),
      Ev(1150, 20, 4, 1, EventKind::kComplete, Category::kRuntime, 501, 12),
      // record_param_comms (id 13) pushed its id; its launch (corr 502) lies outside it in time.
      Ev(2000, 0, 3, 1, EventKind::kInstant, Category::kCapture, 13),
      Ev(2000, 100, 2, 1, EventKind::kComplete, Category::kOperator),
      Ev(2150, 20, 4, 1, EventKind::kComplete, Category::kRuntime, 502, 13),
      Ev(1300, 400, 5, 2, EventKind::kComplete, Category::kKernel, 501),
      Ev(2300, 400, 6, 2, EventKind::kComplete, Category::kKernel, 502),
      // An id whose operator ended after the window closed: counted, not a slice.
      Ev(2900, 0, 3, 1, EventKind::kInstant, Category::kCapture, 14)};
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  ASSERT_TRUE((*w)->Close().ok());
  std::ofstream(dir + "/manifest.json") << R"({"format": "rlprof-capture", "format_version": 1,
    "run_id": "r", "scope": "step", "mode": "discrete", "steps": [1],
    "identity": {"rank": 0, "world_size": 1, "host": "h", "pid": 7},
    "window": {"open_ns": 900, "close_ns": 3000, "close_reason": "step"},
    "counts": {"events": 11, "dropped_events": 0, "threads": 1}, "complete": true})";
  auto read = ReadTrace(dir);
  ASSERT_TRUE(read.ok()) << read.status().message();
  Trace& t = *read;
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < t.size(); ++i) row[t.str(t.name[i])] = i;
  EXPECT_EQ(row.count("external_id"), 0u);  // attributes, not slices
  EXPECT_EQ(t.external[row["aten::mm"]], 12);
  EXPECT_EQ(t.external[row["aten::linear"]], 11);
  EXPECT_EQ(t.external[row["gemm_kernel"]], 12);
  EXPECT_EQ(t.external[row["reduce_kernel"]], 13);
  EXPECT_EQ(t.diagnostics.Get("external_id_without_operator"), 1u);
  const std::vector<int32_t> op = LaunchingOperators(t);
  EXPECT_EQ(op[row["gemm_kernel"]], static_cast<int32_t>(row["aten::mm"]));
  EXPECT_EQ(op[row["reduce_kernel"]], static_cast<int32_t>(row["record_param_comms"]));
  EXPECT_EQ(op[row["aten::mm"]], -1);
  // The kernel launched by the communication operator is communication (nesting alone would
  // not tell: its launch is outside the operator).
  Classification c = Classifier::Default().Classify(t, &t.diagnostics);
  EXPECT_EQ(c.of[row["reduce_kernel"]], WorkClass::kCommunication);
  EXPECT_EQ(c.of[row["gemm_kernel"]], WorkClass::kCompute);
  // Operator statistics carry the device time of what each operator launched (docs/
  // definitions.md §5.5): by external id, so record_param_comms gets its kernel although its
  // launch lies outside it in time.
  TraceAnalysis a = AnalyseTrace(t, Classifier::Default(), {});
  std::map<std::string, OpStat> ops;
  for (const OpStat& o : a.host_ops) ops[o.name] = o;
  EXPECT_EQ(ops["aten::mm"].device_total, 400);
  EXPECT_EQ(ops["aten::mm"].kernels, 1);
  EXPECT_EQ(ops["record_param_comms"].device_total, 400);
  EXPECT_EQ(ops["record_param_comms"].kernels, 1);
  EXPECT_EQ(ops["aten::linear"].device_total, 0);  // innermost only
  EXPECT_EQ(ops["aten::linear"].kernels, 0);
}

}  // namespace
}  // namespace rlprof::analysis

namespace rlprof::analysis {
namespace {

// A discrete, scheduled capture (decode iterations of rollout_generate): its step and stage
// began before the window opened, so only the manifest knows them.
TEST(CaptureReader, TakesStepAndStageFromTheManifestWhenTheWindowOpenedInsideThem) {
  std::string dir = format::TestDir() + "/sched";
  std::filesystem::create_directories(dir);
  auto w = format::RawWriter::Create(dir + "/events.rlp", {.rank = 0, .pid = 7, .host = "h"});
  ASSERT_TRUE(w.ok());
  std::vector<format::StringEntry> s = {{1, "aten::mm"}, {2, "aten::add"}};
  ASSERT_TRUE((*w)->AddStrings(s).ok());
  std::vector<format::TrackEntry> tracks = {{1, format::TrackKind::kThread, 10, 7, "main"},
                                            {2, format::TrackKind::kThread, 11, 7, "other"}};
  ASSERT_TRUE((*w)->AddTracks(tracks).ok());
  std::vector<Event> ev = {Ev(1200, 100, 1, 1, EventKind::kComplete, Category::kOperator),
                           Ev(1400, 100, 2, 1, EventKind::kComplete, Category::kOperator),
                           Ev(1500, 10, 2, 2, EventKind::kComplete, Category::kOperator)};
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  ASSERT_TRUE((*w)->Close().ok());
  std::ofstream(dir + "/manifest.json") << R"({"format": "rlprof-capture", "format_version": 1,
    "run_id": "r", "scope": "rollout_generate", "mode": "discrete", "steps": [3],
    "stage": "rollout_generate", "role": "rollout",
    "identity": {"rank": 0, "world_size": 2, "host": "h", "pid": 7},
    "window": {"open_ns": 1000, "close_ns": 2000, "close_reason": "schedule"},
    "counts": {"events": 3, "dropped_events": 0, "threads": 2}, "complete": true})";
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->steps.size(), 1u);
  EXPECT_EQ(t->steps[0].step, 3);
  EXPECT_EQ(t->steps[0].start_ns, 1000);
  EXPECT_EQ(t->steps[0].end_ns, 2000);
  ASSERT_EQ(t->stages.size(), 1u);
  EXPECT_EQ(t->stages[0].name, "rollout_generate");
  EXPECT_EQ(t->stages[0].role, "rollout");
  // On the thread that carries the work.
  EXPECT_EQ(t->tracks[t->stages[0].track].name, "main");
  EXPECT_EQ(t->diagnostics.Get("step_from_manifest"), 1u);
  EXPECT_EQ(t->diagnostics.Get("stage_from_manifest"), 1u);
}

}  // namespace
}  // namespace rlprof::analysis
