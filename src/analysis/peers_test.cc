// The classes of disagreement with HTA and TraceLens (issue 11), each on its own fixture in
// test/data/peers/ (PROVENANCE.md there). The HTA numbers below are HolisticTraceAnalysis
// 0.5.0's own output on those files (python/tests/test_peers_hta.py recomputes them where the
// peers environment exists); the TraceLens numbers are worked out in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/passes/views.h"

namespace rlprof::analysis {
namespace {

constexpr int64_t kUs = 1000;
const std::string kPeers = std::string(RLPROF_SOURCE_DIR) + "/test/data/peers/";

TraceAnalysis AnalyseFixture(const std::string& name, CompatMode compat = CompatMode::kNative) {
  auto t = ReadTrace(kPeers + name);
  EXPECT_TRUE(t.ok()) << name << ": " << t.status().ToString();
  if (!t.ok()) return {};
  AnalysisOptions o;
  o.compat = compat;
  return AnalyseTrace(*t, Classifier::Default(), o);
}

std::map<std::string, IdleBreakdownRow> IdleByStream(const TraceAnalysis& a) {
  std::map<std::string, IdleBreakdownRow> out;
  for (const auto& r : a.idle_breakdown) out[r.stream] = r;
  return out;
}

// Class 1: Kineto's GPU-side ProfilerStep annotations bound TraceLens's timeline. Inside the
// three GPU steps: gemm 200 + 199.6 + 80 = 479.6 µs of computation; the all-reduce [1250.7,
// 1500.0] overlaps gemm_1 [1100.4, 1300.4] by 49.7 µs (exposed 199.6); the copy 50.3 µs;
// span 1100.4 → 1900.9 = 800.5 µs, busy 399.6 + 199.6 + 50.3 + 80 = 729.5. The warm-up (600 µs)
// and cool-down (400 µs) kernels outside the steps are not counted. TraceLens itself (AMD-AGI/
// TraceLens @ 171dd74) has no step logic: it would count them, being linked to their launches.
TEST(GpuStepWindowsTest, TraceLensTimelineIsComputedInsideTheGpuSideProfilerSteps) {
  TraceAnalysis a = AnalyseFixture("gpu_step_windows.json");
  const auto& r = a.tracelens;
  EXPECT_EQ(r.gpu_step_windows, 3);
  EXPECT_EQ(a.diagnostics.Get("tracelens_inside_gpu_steps"), 3u);
  // The 60 µs kernel without a launch in the trace, under the all-reduce, is not read either
  // (TraceLens's include_unlinked_kernels=False): else computation would be 539.6.
  EXPECT_EQ(a.diagnostics.Get("tracelens_unlinked_work"), 1u);
  EXPECT_EQ(r.computation, 479600);
  EXPECT_EQ(r.total_comm, 249300);
  EXPECT_EQ(r.exposed_comm, 199600);
  EXPECT_EQ(r.exposed_memcpy, 50300);
  EXPECT_EQ(r.total, 800500);
  EXPECT_EQ(r.busy, 729500);
  EXPECT_EQ(r.idle, 71000);
  EXPECT_EQ(r.computation + r.exposed_comm + r.exposed_memcpy + r.idle, r.total);
}

// The main breakdown keeps host-defined step windows extended to the device work they launched
// (definitions.md §2.1): that work is what the GPU annotation brackets, so step 1's window ends
// where its GPU annotation does; the warm-up kernel is outside every step and counted.
TEST(GpuStepWindowsTest, StepWindowsReachTheEndOfTheGpuSideStep) {
  TraceAnalysis a = AnalyseFixture("gpu_step_windows.json");
  ASSERT_EQ(a.steps.size(), 3u);
  const int64_t base = 1'700'000'000'000'000;  // the fixtures' origin, ns
  EXPECT_EQ(a.steps[0].window.end - base, 1500'000);  // GPU ProfilerStep#1 ends at 1500.0
  // gemm_1 and the kernel launched before the profiler started (no launch in the trace): the
  // main breakdown counts all device work; TraceLens's timeline leaves the latter out.
  EXPECT_EQ(a.steps[0].atoms.compute(), 260 * kUs);
  EXPECT_EQ(a.diagnostics.Get("work_outside_step_windows"), 2u);
}

// HTA's last-step rule takes the latest ProfilerStep start among host events and GPU
// annotations (both are "CPU" rows to HTA): gemm_3, launched at 1810 after the host step 3 began
// at 1800 but before its GPU annotation at 1820.9, is kept.
TEST(GpuStepWindowsTest, HtaCompatLastStepBoundIsTheLaterGpuAnnotation) {
  TraceAnalysis a = AnalyseFixture("gpu_step_windows.json", CompatMode::kHta);
  EXPECT_EQ(a.hta.kernel_time, 1879 * kUs);
  EXPECT_EQ(a.hta.compute, 1075 * kUs);
  EXPECT_EQ(a.hta.idle, 555 * kUs);
  EXPECT_EQ(a.hta.non_compute, 249 * kUs);
  EXPECT_EQ(HtaPercentages(a.hta).comm_comp_overlap, 19.68);
}

// Class 2: accelerators Kineto records under their own categories are device work.
TEST(OtherAcceleratorsTest, MtiaXpuAndPrivateUse1TracesAreDeviceWorkNotCpuOnly) {
  for (const char* f : {"mtia_accelerator.json", "xpu_accelerator.json",
                        "privateuse1_accelerator.json"}) {
    SCOPED_TRACE(f);
    TraceAnalysis a = AnalyseFixture(f);
    EXPECT_FALSE(a.cpu_only);
    ASSERT_EQ(a.steps.size(), 2u);
    // Per step: matmul 300.25 µs ∪ add 20 µs ∪ the 400 µs kernel on stream 2.
    EXPECT_EQ(a.steps[0].kernels, 3);
    EXPECT_EQ(a.steps[0].window.launches, 3);
    EXPECT_EQ(a.steps[0].atoms.compute(), 560 * kUs);
    EXPECT_EQ(a.kernel_rows.size(), 6u);
    // The backend's runtime calls are launches: the device time of the host operator that made
    // them is found through them (definitions.md §5.5): 2 × (300.25 + 20 + 400) µs.
    bool found = false;
    for (const auto& op : a.host_ops) {
      if (op.name != "aten::linear") continue;
      found = true;
      EXPECT_EQ(op.device_total, 1'440'500);
      EXPECT_EQ(op.kernels, 6);
    }
    EXPECT_TRUE(found);
  }
}

TEST(OtherAcceleratorsTest, KinetoRuntimeCategoriesOfEveryBackendAreLaunches) {
  for (const char* c : {"cuda_runtime", "cuda_driver", "xpu_runtime", "xpu_driver", "mtia_runtime",
                        "privateuse1_runtime", "privateuse1_driver", "hpu_op", "glow_runtime"})
    EXPECT_TRUE(IsRuntimeCategory(c)) << c;
  EXPECT_FALSE(IsRuntimeCategory("cpu_op"));
}

// Class 3: HTA's temporal, idle and overlap breakdowns on overlapping streams, reproduced to the
// µs: inward µs rounding on float64 values, the 0.6 µs kernel's negative duration, the stream
// sync counted as busy non-compute time, gaps measured from the previous event's end.
TEST(HtaCompatTest, MultiStreamTraceEqualsHtaToTheMicrosecond) {
  TraceAnalysis a = AnalyseFixture("multistream.json", CompatMode::kHta);
  EXPECT_EQ(a.hta.idle, 420 * kUs);
  EXPECT_EQ(a.hta.compute, 796 * kUs);
  EXPECT_EQ(a.hta.non_compute, 798 * kUs);
  EXPECT_EQ(a.hta.kernel_time, 2014 * kUs);
  HtaPercent p = HtaPercentages(a.hta);
  EXPECT_EQ(p.comm_comp_overlap, 31.6);
  EXPECT_EQ(p.idle, 20.85);
  auto idle = IdleByStream(a);
  ASSERT_EQ(idle.size(), 4u);
  EXPECT_EQ(idle["0:7"].host_wait, 271 * kUs);
  EXPECT_EQ(idle["0:7"].other, 804 * kUs);
  EXPECT_EQ(idle["0:13"].host_wait, 1492 * kUs);
  EXPECT_EQ(idle["0:13"].other, 66 * kUs);
  EXPECT_EQ(idle["0:14"].host_wait, 943 * kUs);
  EXPECT_EQ(idle["0:14"].kernel_wait, 32 * kUs);
  EXPECT_EQ(idle["0:21"].host_wait, 500 * kUs);
}

// Native mode keeps rlprof's definitions on the same trace: exact ns, sync is not work, the
// last step is analysed like the others.
TEST(HtaCompatTest, NativeModeKeepsExactNanosecondsAndExcludesSync) {
  TraceAnalysis a = AnalyseFixture("multistream.json");
  EXPECT_EQ(a.hta.kernel_time, 3015400);  // 20.3 µs → 3035.7 µs, all three steps
  EXPECT_EQ(a.classes[static_cast<int>(WorkClass::kSync)].count, 3);
  for (const auto& k : a.kernel_rows) EXPECT_NE(k.name, "Stream Sync");
}

}  // namespace
}  // namespace rlprof::analysis
