// The framework-content views (src/analysis/passes/contents.h) on a hand-built trace whose numbers are
// worked out below, plus golden CSVs of the three tables (test/golden/analysis/contents/;
// RLPROF_UPDATE_GOLDEN=1 rewrites them).
#include "src/analysis/passes/contents.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/tables/tables.h"
#include "src/base/files.h"
#include "src/base/golden_test_util.h"

namespace rlprof::analysis {
namespace {

const std::string kGolden = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/contents/";

void ExpectGolden(const std::string& rel, const std::string& actual) {
  EXPECT_GOLDEN(kGolden + rel, actual);
}

// One step (0..1000 µs) with stages rollout_generate [0, 400) and actor_update [400, 1000).
// actor_update runs TinyLM [400, 900): layers.0 [410, 600) (attn [420, 500): aten::linear
// [430, 490) with aten::addmm inside), layers.1 [610, 890) (attn [620, 700)); an operator
// outside modules at [920, 980). Allocations: +1000 B in aten::addmm, −400 B later; the
// allocator's counter goes 5000 → 6000 → 5600; RSS 1e6 → 1.5e6.
Trace Example() {
  Trace t;
  const uint32_t th = t.AddTrack({TrackType::kThread, 1, 7, -1, -1, "main", "rank0"});
  const uint32_t mod = t.Intern("module"), op = t.Intern("operator"),
                 alloc = t.Intern("allocation"), cpu = t.Intern("cpu");
  auto us = [](int64_t v) { return v * 1000; };
  t.steps.push_back({1, 0, us(1000), th, "", "step"});
  t.stages.push_back({1, 0, us(400), th, "rollout", "rollout_generate"});
  t.stages.push_back({1, us(400), us(1000), th, "actor", "actor_update"});
  auto module = [&](int64_t b, int64_t e, const char* path, const char* cls) {
    size_t r = t.AddSlice(us(b), us(e - b), t.Intern(path), mod, th);
    t.detail[r] = t.Intern(cls);
  };
  auto oper = [&](int64_t b, int64_t e, const char* name, const char* stack) {
    size_t r = t.AddSlice(us(b), us(e - b), t.Intern(name), op, th);
    if (stack) t.detail[r] = t.Intern(stack);
  };
  module(400, 900, "TinyLM", "TinyLM");
  module(410, 600, "TinyLM.layers.0", "Block");
  module(420, 500, "TinyLM.layers.0.attn", "Linear");
  oper(430, 490, "aten::linear",
       "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:125:forward\n"
       "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1773:_call_impl\n"
       "/home/u/train.py:20:forward\n/home/u/train.py:40:step");
  oper(440, 480, "aten::addmm", nullptr);
  oper(510, 590, "aten::relu",
       "/home/u/train.py:21:forward\n/home/u/train.py:40:step");
  module(610, 890, "TinyLM.layers.1", "Block");
  module(620, 700, "TinyLM.layers.1.attn", "Linear");
  oper(630, 690, "aten::linear",
       "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:125:forward\n"
       "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1773:_call_impl\n"
       "/home/u/train.py:20:forward\n/home/u/train.py:40:step");
  oper(920, 980, "aten::sum", "/home/u/train.py:41:step");
  oper(100, 150, "aten::zeros", "<frozen runpy>:88:_run_code");
  size_t a = t.AddSlice(us(450), 0, cpu, alloc, th, SliceKind::kInstant);
  t.bytes[a] = 1000;
  t.detail[a] = t.Intern("aten::addmm");
  a = t.AddSlice(us(950), 0, cpu, alloc, th, SliceKind::kInstant);
  t.bytes[a] = -400;
  const uint32_t series = t.Intern("allocated_bytes cpu"), rss = t.Intern("rss_bytes");
  t.counters.push_back({th, us(0), 5000, series});
  t.counters.push_back({th, us(450), 6000, series});
  t.counters.push_back({th, us(950), 5600, series});
  t.counters.push_back({th, us(0), 1e6, rss});
  t.counters.push_back({th, us(1000), 1.5e6, rss});
  t.counters.push_back({th, us(500), 42, t.Intern("queue_depth")});  // not memory
  t.Finalize();
  return t;
}

TEST(ContentsTest, ModuleViewIsTimePerModulePath) {
  const auto rows = ModuleView(Example());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].path, "TinyLM");
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_EQ(rows[0].total, 500000);
  EXPECT_EQ(rows[0].self, 500000 - 190000 - 280000);
  EXPECT_EQ(rows[1].path, "TinyLM.layers.0");
  EXPECT_EQ(rows[1].cls, "Block");
  EXPECT_EQ(rows[1].self, 190000 - 80000);
  EXPECT_EQ(rows[1].ops, 1);  // aten::relu
  EXPECT_EQ(rows[2].path, "TinyLM.layers.0.attn");
  EXPECT_EQ(rows[2].depth, 2);
  EXPECT_EQ(rows[2].ops, 1);  // aten::linear; aten::addmm is inside it
  EXPECT_EQ(rows[2].op_time, 60000);
}

TEST(ContentsTest, OperatorsGroupByTheirUserFrame) {
  const auto rows = OpsByFrame(Example());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].frame, "/home/u/train.py:20:forward");
  EXPECT_EQ(rows[0].ops, 2);
  EXPECT_EQ(rows[0].total, 120000);
  EXPECT_EQ(rows[0].top_op, "aten::linear");
  EXPECT_EQ(UserFrame("/x/torch/a.py:1:f\n<frozen runpy>:2:g"), "");
  EXPECT_EQ(UserFrame("C:/torch/x.py:1:f\nC:/me/run.py:3:main"), "C:/me/run.py:3:main");
}

// rlprof's stack source marks the frames under the packages' real directories: a checkout or a
// user folder named "rlprof" or "torch" is user code (issue: scripts/test in a clone named rlprof).
TEST(ContentsTest, MarkedStacksDecideByWhereThePackagesWere) {
  EXPECT_EQ(UserFrame("[torch] /v/site-packages/torch/nn/modules/linear.py:125:forward\n"
                      "[rlprof] /v/site-packages/rlprof/profiler.py:40:wrapper\n"
                      "/home/u/rlprof/python/tests/test_x.py:12:step\n"
                      "/home/u/rlprof/python/tests/test_x.py:30:main"),
            "/home/u/rlprof/python/tests/test_x.py:12:step");
  // Marked: a user folder named torch is the user's; frozen importlib frames stay framework.
  EXPECT_EQ(UserFrame("[torch] /v/torch/functional.py:1:f\n<frozen runpy>:2:g\n/me/torch/run.py:3:main"),
            "/me/torch/run.py:3:main");
  EXPECT_EQ(UserFrame("[torch] /v/torch/a.py:1:f\n[rlprof] /v/rlprof/b.py:2:g"), "");
  // Unmarked (other tools' traces): a folder named rlprof is no longer taken for the package.
  EXPECT_EQ(UserFrame("/home/u/rlprof/train.py:7:main"), "/home/u/rlprof/train.py:7:main");
  EXPECT_EQ(UserFrame("/v/site-packages/rlprof/profiler.py:4:f\n/me/run.py:3:main"), "/me/run.py:3:main");
  EXPECT_TRUE(IsMarkedFrameworkFrame("[torch] /a.py:1:f"));
  EXPECT_FALSE(IsMarkedFrameworkFrame("/a/[x] b.py:1:f"));
}

TEST(ContentsTest, MemoryPeakPerStage) {
  const Trace t = Example();
  const TraceAnalysis a = AnalyseTrace(t, Classifier::Default(), AnalysisOptions{});
  const MemoryPeakRow* update = nullptr;
  for (const auto& r : a.memory_peaks)
    if (r.stage == "actor_update" && r.series == "allocated_bytes cpu") update = &r;
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(update->at_start, 5000);
  EXPECT_EQ(update->peak, 6000);
  EXPECT_EQ(update->at_end, 5600);
  EXPECT_EQ(update->allocations, 2);
  EXPECT_EQ(update->allocated, 1000);
  for (const auto& r : a.memory_peaks) EXPECT_NE(r.series, "queue_depth");
  // Modules and allocations are structure, not work: the CPU-only compute is the operators'.
  EXPECT_EQ(a.modules.size(), 5u);
}

TEST(ContentsTest, Golden) {
  const TraceAnalysis a = AnalyseTrace(Example(), Classifier::Default(), AnalysisOptions{});
  ExpectGolden("module_view.csv", ToCsv(ModuleViewTable(a)));
  ExpectGolden("memory_peak.csv", ToCsv(MemoryPeakTable(a)));
  ExpectGolden("ops_by_frame.csv", ToCsv(OpsByFrameTable(a)));
}

// torch.profiler's python tracer events (`nn.Module: Linear_0`) make the same view, the path
// built from the enclosing module events.
TEST(ContentsTest, ModuleViewOfATorchProfilerTrace) {
  auto t = ReadTrace(std::string(RLPROF_SOURCE_DIR) +
                     "/test/data/fixtures/kineto/kineto_modules_tinylm.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const auto rows = ModuleView(*t);
  std::map<std::string, ModuleRow> by;
  for (const auto& r : rows) by[r.path] = r;
  ASSERT_EQ(by.count("TinyLM_0"), 1u);
  ASSERT_EQ(by.count("TinyLM_0.Block_1.Linear_1"), 1u);
  EXPECT_EQ(by["TinyLM_0.Block_1.Linear_1"].cls, "Linear");
  EXPECT_EQ(by["TinyLM_0.Block_1.Linear_1"].depth, 2);
  EXPECT_GE(by["TinyLM_0.Block_1.Linear_1"].ops, 1);  // aten::linear
  EXPECT_EQ(by["TinyLM_0"].depth, 0);
  EXPECT_LE(by["TinyLM_0"].self, by["TinyLM_0"].total);
  const TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), AnalysisOptions{});
  ExpectGolden("module_view_kineto.csv", ToCsv(ModuleViewTable(a)));
}

TEST(ContentsTest, EmptyWithoutContents) {
  Trace t;
  const uint32_t th = t.AddTrack({TrackType::kThread, 1, 7, -1, -1, "main", ""});
  t.AddSlice(0, 10, t.Intern("aten::mm"), t.Intern("operator"), th);
  t.Finalize();
  EXPECT_TRUE(ModuleView(t).empty());
  EXPECT_TRUE(OpsByFrame(t).empty());
  EXPECT_TRUE(MemoryPeaks(t, {}).empty());
}

TEST(ContentsTest, UserRangesSumPerNameAndTrackLikeNvtxSum) {
  Trace t;
  const uint32_t th = t.AddTrack({TrackType::kThread, 1, 7, -1, -1, "main", "rank0"});
  const uint32_t th2 = t.AddTrack({TrackType::kThread, 1, 8, -1, -1, "worker", "rank0"});
  // An NVTX domain's lane on thread 7 (format::kMarkerLaneTidBase | domain 1 << 22 | 7).
  const uint32_t lane = t.AddTrack({TrackType::kThread, 1, (int64_t{1} << 30) | (1 << 22) | 7, -1, -1,
                                    "vllm", "rank0"});
  const uint32_t async = t.AddTrack({TrackType::kAsync, 1, 0, -1, -1, "NVTX", "rank0"});
  const uint32_t user = t.Intern("user"), op = t.Intern("operator");
  t.AddSlice(0, 300, t.Intern("forward"), user, th);
  t.AddSlice(1000, 100, t.Intern("forward"), user, th2);  // another thread: the same row
  t.AddSlice(2000, 200, t.Intern("forward"), user, th);
  t.AddSlice(0, 50, t.Intern("execute_model"), user, lane);
  t.AddSlice(100, 70, t.Intern("execute_model"), user, lane);
  t.AddSlice(500, 5000, t.Intern("weight_sync_wait"), user, async);
  t.AddSlice(10, 0, t.Intern("loss ready"), user, th, SliceKind::kInstant);
  t.AddSlice(20, 0, t.Intern("loss ready"), user, th2, SliceKind::kInstant);
  t.AddSlice(0, 900, t.Intern("aten::mm"), op, th);  // not a user range
  t.Finalize();
  const std::vector<RangeRow> r = UserRanges(t);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].name, "weight_sync_wait");
  EXPECT_EQ(r[0].track, "NVTX");
  EXPECT_EQ(r[1].name, "forward");
  EXPECT_EQ(r[1].track, "");
  EXPECT_EQ(r[1].count, 3);
  EXPECT_EQ(r[1].total, 600);
  EXPECT_EQ(r[1].min, 100);
  EXPECT_EQ(r[1].p50, 200);
  EXPECT_EQ(r[1].max, 300);
  EXPECT_EQ(r[2].name, "execute_model");
  EXPECT_EQ(r[2].track, "vllm");
  EXPECT_EQ(r[2].count, 2);
  EXPECT_EQ(r[2].total, 120);
  EXPECT_TRUE(r[3].mark);
  EXPECT_EQ(r[3].name, "loss ready");
  EXPECT_EQ(r[3].count, 2);
  Trace none;
  none.Finalize();
  EXPECT_TRUE(UserRanges(none).empty());
}

}  // namespace
}  // namespace rlprof::analysis

namespace rlprof::analysis {
namespace {

// Issue 35: ranges of INT64_MAX/2 each summed to a negative total (signed overflow,
// UBSan) with "diagnostics: none"; every view's sums saturate.
TEST(ContentsTest, RangeTotalsSaturateInsteadOfWrapping) {
  Trace t;
  const uint32_t th = t.AddTrack({TrackType::kThread, 1, 7, -1, -1, "main", "rank0"});
  const uint32_t user = t.Intern("user");
  const int64_t half = INT64_MAX / 2 + 1;
  t.AddSlice(0, half, t.Intern("r"), user, th);
  t.AddSlice(1, half, t.Intern("r"), user, th);
  t.AddSlice(2, half, t.Intern("r"), user, th);
  const auto rows = UserRanges(t);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].count, 3);
  EXPECT_GT(rows[0].total, 0);            // never wrapped to a negative total
  EXPECT_GE(rows[0].total, rows[0].max);  // saturated at the largest time
}

}  // namespace
}  // namespace rlprof::analysis
