// Golden cases: every worked example of docs/definitions.md §5 (reference
// analysis-definitions.md), reproduced exactly, plus overlap, nesting, memcpy under compute,
// receive bubbles and empty steps.
#include "src/analysis/passes/analyse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <regex>

#include "src/analysis/run/run.h"
#include "src/analysis/model/test_traces.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/passes/views.h"
#include "src/analysis/passes/windows.h"

namespace rlprof::analysis {
namespace {

using testing::ExampleA;
using testing::kUs;
using testing::TraceBuilder;

TraceAnalysis Analyse(const Trace& t, AnalysisOptions o = {}) {
  return AnalyseTrace(t, Classifier::Default(), o);
}

void ExpectNoInvariantViolations(const TraceAnalysis& a) {
  for (const auto& [k, v] : a.diagnostics.counts)
    EXPECT_EQ(k.rfind("invariant_", 0), std::string::npos) << k << " = " << v;
}

TEST(ExampleATest, AtomsMatchTheWorkedExample) {
  TraceAnalysis a = Analyse(ExampleA());
  ASSERT_EQ(a.steps.size(), 1u);
  const StepResult& s = a.steps[0];
  EXPECT_EQ(s.window.step, 7);
  EXPECT_EQ(s.window.start, 0);
  EXPECT_EQ(s.window.end, 100 * kUs);
  EXPECT_EQ(s.atoms.compute_only, 40 * kUs);
  EXPECT_EQ(s.atoms.overlap, 15 * kUs);
  EXPECT_EQ(s.atoms.comm_only, 20 * kUs);
  EXPECT_EQ(s.atoms.memory_only, 10 * kUs);
  EXPECT_EQ(s.atoms.other_only, 0);
  EXPECT_EQ(s.atoms.idle, 15 * kUs);
  EXPECT_EQ(s.atoms.sum(), 100 * kUs);
  EXPECT_EQ(s.recv_sum, 5 * kUs);
  EXPECT_EQ(s.preparing, 5 * kUs);
  EXPECT_FALSE(a.cpu_only);
  ExpectNoInvariantViolations(a);
}

TEST(ExampleATest, MsprofColumnsMatchTheWorkedExample) {
  TraceAnalysis a = Analyse(ExampleA());
  MsprofRow m = MsprofFromStep(a.steps[0]);
  EXPECT_EQ(m.computing, 55 * kUs);
  EXPECT_EQ(m.communication, 35 * kUs);
  EXPECT_EQ(m.comm_not_overlapped, 20 * kUs);
  EXPECT_EQ(m.overlapped, 15 * kUs);
  EXPECT_EQ(m.free, 25 * kUs);
  EXPECT_EQ(m.bubble, 5 * kUs);
  EXPECT_EQ(m.not_overlapped_excl_recv, 15 * kUs);
  EXPECT_EQ(m.stage, 95 * kUs);
  EXPECT_EQ(m.preparing, 5 * kUs);
  EXPECT_EQ(m.computing + m.comm_not_overlapped + m.free - m.bubble, m.stage);
}

TEST(ExampleATest, HtaViewExcludesTheSyncEventAndCountsMemsetAsNonCompute) {
  TraceAnalysis a = Analyse(ExampleA());
  EXPECT_EQ(a.hta.kernel_time, 93 * kUs);
  EXPECT_EQ(a.hta.compute, 55 * kUs);
  EXPECT_EQ(a.hta.idle, 8 * kUs);
  EXPECT_EQ(a.hta.non_compute, 30 * kUs);
  HtaPercent p = HtaPercentages(a.hta);
  EXPECT_DOUBLE_EQ(p.compute, 59.14);
  EXPECT_DOUBLE_EQ(p.idle, 8.60);
  EXPECT_DOUBLE_EQ(p.non_compute, 32.26);
  EXPECT_DOUBLE_EQ(p.comm_comp_overlap, 42.86);
}

TEST(ExampleATest, HtaViewCountingTheSyncAsWorkHidesFiveMicrosecondsOfIdle) {
  // HTA before PRs #149 / #162: a user rule turning the sync into device work.
  auto cls = Classifier::FromRulesYaml(
      "rules:\n  - {name: '^Stream Wait Event$', track: device, class: unclassified}\n", "test");
  ASSERT_TRUE(cls.ok()) << cls.status().ToString();
  TraceAnalysis a = AnalyseTrace(ExampleA(), *cls, {});
  EXPECT_EQ(a.hta.idle, 3 * kUs);
  EXPECT_EQ(a.hta.non_compute, 35 * kUs);
  EXPECT_EQ(a.diagnostics.Get("unclassified_device_events"), 1u);
}

TEST(ExampleATest, TraceLensViewCountsMemsetAsComputation) {
  TraceAnalysis a = Analyse(ExampleA());
  const auto& r = a.tracelens;
  EXPECT_EQ(r.total, 93 * kUs);
  EXPECT_EQ(r.computation, 57 * kUs);
  EXPECT_EQ(r.exposed_comm, 20 * kUs);
  EXPECT_EQ(r.exposed_memcpy, 8 * kUs);
  EXPECT_EQ(r.busy, 85 * kUs);
  EXPECT_EQ(r.idle, 8 * kUs);
  EXPECT_EQ(r.computation + r.exposed_comm + r.exposed_memcpy + r.idle, r.total);
  EXPECT_EQ(r.total_comm, 35 * kUs);
  EXPECT_EQ(r.total_memcpy, 13 * kUs);
}

TEST(ExampleATest, StepWithoutStagesIsOneNoneStage) {
  TraceAnalysis a = Analyse(ExampleA());
  ASSERT_EQ(a.stages.size(), 1u);
  EXPECT_EQ(a.stages[0].name, "(none)");
  EXPECT_EQ(a.stages[0].duration, 100 * kUs);
  EXPECT_EQ(a.stages[0].atoms.overlap, 15 * kUs);
}

// HTA 0.5.0 rounds inward (start = ceil, end = floor of ts + dur, in µs) and keeps what
// rounding leaves with a zero or negative duration: each is a merge group of its own whose
// negative run time counts (checked against HTA itself: idle 199, compute 1, kernel_time 200).
TEST(ExampleBTest, HtaRoundingShortensAndKeepsSubMicrosecondEventsWithTheirNegativeRunTime) {
  TraceBuilder b;
  b.Device(7, "k1", "kernel", 100250, 103750);  // ts 100.250 dur 3.500 → [101, 103]
  b.Device(7, "k2", "kernel", 200100, 200700);  // → [201, 200]: run time −1
  b.Device(7, "k3", "kernel", 300900, 301100);  // → [301, 301]: run time 0
  Trace t = b.Build();
  AnalysisOptions o;
  o.compat = CompatMode::kHta;
  TraceAnalysis hta = Analyse(t, o);
  EXPECT_EQ(hta.hta.kernel_time, 200 * kUs);
  EXPECT_EQ(hta.hta.compute, 1 * kUs);
  EXPECT_EQ(hta.hta.idle, 199 * kUs);
  EXPECT_EQ(hta.hta.non_compute, 0);
  // Idle breakdown: gaps from each event's predecessor's end (103 → 201, 200 → 301).
  ASSERT_EQ(hta.idle_breakdown.size(), 1u);
  EXPECT_EQ(hta.idle_breakdown[0].other, (98 + 101) * kUs);
  TraceAnalysis native = Analyse(t);
  EXPECT_EQ(native.hta.compute, 3500 + 600 + 200);
  EXPECT_EQ(native.steps[0].atoms.compute(), 4300);
}

Trace ExampleC(bool with_launch) {
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Step(2, 100, 200);
  b.Kernel(20, "ncclDevKernel_AllReduce", 90, 130, with_launch ? 42 : -1);
  if (with_launch) b.Launch(42, 85);
  return b.Build();
}

TEST(ExampleCTest, ClippingSplitsTheCrossingKernelBetweenSteps) {
  TraceAnalysis a = Analyse(ExampleC(false));
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].atoms.comm(), 10 * kUs);
  EXPECT_EQ(a.steps[1].atoms.comm(), 30 * kUs);
  EXPECT_EQ(a.steps[0].atoms.sum(), 100 * kUs);
  EXPECT_EQ(a.steps[1].atoms.sum(), 100 * kUs);
  ExpectNoInvariantViolations(a);
}

TEST(ExampleCTest, ByStartGivesTheWholeKernelToTheFirstStepAndReportsOverflow) {
  AnalysisOptions o;
  o.assign = AssignMode::kByStart;
  TraceAnalysis a = Analyse(ExampleC(false), o);
  EXPECT_EQ(a.steps[0].atoms.comm(), 40 * kUs);
  EXPECT_EQ(a.steps[1].atoms.comm(), 0);
  EXPECT_EQ(a.steps[0].overflow, 30 * kUs);
  EXPECT_EQ(a.steps[1].overflow, 0);
}

TEST(ExampleCTest, CanonicalWindowKeepsDeviceWorkWithTheStepThatLaunchedIt) {
  TraceAnalysis a = Analyse(ExampleC(true));
  EXPECT_EQ(a.steps[0].window.end, 130 * kUs);
  EXPECT_EQ(a.steps[1].window.start, 130 * kUs);
  EXPECT_EQ(a.steps[1].window.end, 200 * kUs);
  EXPECT_EQ(a.steps[0].atoms.comm(), 40 * kUs);
  EXPECT_EQ(a.steps[1].atoms.comm(), 0);
  EXPECT_EQ(a.steps[1].atoms.idle, 70 * kUs);
}

TEST(ExampleCTest, ByLaunchGivesTheWholeKernelToTheStepOfItsLaunch) {
  AnalysisOptions o;
  o.assign = AssignMode::kByLaunch;
  TraceAnalysis a = Analyse(ExampleC(true), o);
  EXPECT_EQ(a.steps[0].atoms.comm(), 40 * kUs);
  EXPECT_EQ(a.steps[1].atoms.comm(), 0);
  EXPECT_EQ(a.steps[0].overflow, 0);  // the canonical window already reaches 130
  ExpectNoInvariantViolations(a);
}

// Step 2 launches a kernel at 105 that starts at 120 on another stream, while step 1's kernel
// (launched at 80) still runs until 150, so W1 = [0, 150) and W2 = [150, 200).
Trace CrossingLaunches() {
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Step(2, 100, 200);
  b.Kernel(7, "gemm_a", 90, 150, 1);
  b.Launch(1, 80);
  b.Kernel(20, "gemm_b", 120, 160, 2);
  b.Launch(2, 105);
  return b.Build();
}

TEST(AssignModeTest, ClipSplitsWorkAtTheWindowBoundary) {
  TraceAnalysis a = Analyse(CrossingLaunches());
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].window.end, 150 * kUs);
  EXPECT_EQ(a.steps[0].atoms.compute(), 60 * kUs);  // [90, 150)
  EXPECT_EQ(a.steps[1].atoms.compute(), 10 * kUs);  // [150, 160)
}

TEST(AssignModeTest, ByLaunchKeepsEachKernelWhollyWithItsLaunchingStep) {
  AnalysisOptions o;
  o.assign = AssignMode::kByLaunch;
  TraceAnalysis a = Analyse(CrossingLaunches(), o);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].atoms.compute(), 60 * kUs);
  EXPECT_EQ(a.steps[0].overflow, 0);
  EXPECT_EQ(a.steps[1].atoms.compute(), 40 * kUs);  // gemm_b whole, though it began in W1
  // The step's partition spans [120, 200): 40 compute + 40 idle = 80 over a 50 µs window.
  EXPECT_EQ(a.steps[1].atoms.idle, 40 * kUs);
  EXPECT_EQ(a.steps[1].overflow, 30 * kUs);
  EXPECT_EQ(a.diagnostics.counts.count("by_launch_without_launch"), 0u);
  ExpectNoInvariantViolations(a);
}

TEST(AssignModeTest, ByStartGivesBothKernelsToTheWindowTheyStartIn) {
  AnalysisOptions o;
  o.assign = AssignMode::kByStart;
  TraceAnalysis a = Analyse(CrossingLaunches(), o);
  EXPECT_EQ(a.steps[0].atoms.compute(), 70 * kUs);  // union of [90,150) and [120,160)
  EXPECT_EQ(a.steps[1].atoms.compute(), 0);
}

TEST(AssignModeTest, ByLaunchFallsBackToTheStartForWorkWithoutALaunchAndCountsIt) {
  AnalysisOptions o;
  o.assign = AssignMode::kByLaunch;
  TraceAnalysis a = Analyse(ExampleC(false), o);
  EXPECT_EQ(a.steps[0].atoms.comm(), 40 * kUs);
  EXPECT_EQ(a.steps[1].atoms.comm(), 0);
  EXPECT_EQ(a.diagnostics.counts.at("by_launch_without_launch"), 1u);
}

TEST(CommByGroupTest, EachProcessGroupHasItsCommunicationAndItsExposedPart) {
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Step(2, 100, 200);
  b.Kernel(7, "gemm", 0, 50);
  Trace& t = b.trace();
  const uint32_t tp = t.Intern("tp"), dp = t.Intern("dp");
  t.group[b.Kernel(20, "ncclDevKernel_AllReduce", 40, 60)] = tp;   // 10 hidden under gemm
  t.group[b.Kernel(21, "ncclDevKernel_AllGather", 70, 90)] = dp;
  t.group[b.Kernel(21, "ncclDevKernel_AllGather", 85, 120)] = dp;  // crosses into step 2
  b.Kernel(22, "ncclDevKernel_SendRecv", 95, 100);                  // no group
  TraceAnalysis a = Analyse(b.Build());
  ASSERT_EQ(a.comm_by_group.size(), 4u);
  auto row = [&](int64_t step, const std::string& g) {
    for (const auto& r : a.comm_by_group)
      if (r.step == step && r.group == g) return r;
    ADD_FAILURE() << "no row " << step << " " << g;
    return GroupComm{};
  };
  EXPECT_EQ(row(1, "(none)").comm, 5 * kUs);
  EXPECT_EQ(row(1, "dp").comm, 30 * kUs);  // [70, 100): the union, clipped to the window
  EXPECT_EQ(row(1, "dp").comm_not_overlapped, 30 * kUs);
  EXPECT_EQ(row(1, "dp").ops, 2);
  EXPECT_EQ(row(1, "tp").comm, 20 * kUs);
  EXPECT_EQ(row(1, "tp").comm_not_overlapped, 10 * kUs);
  EXPECT_EQ(row(2, "dp").comm, 20 * kUs);
  EXPECT_EQ(row(2, "dp").ops, 0);  // started in step 1
  // Groups overlap each other (the SendRecv runs under dp's AllGather): their exposed parts
  // (5 + 30 + 10) add up to more than the step's exposed communication, a union.
  EXPECT_EQ(a.steps[0].atoms.comm_only, 40 * kUs);
  ExpectNoInvariantViolations(a);
}

// The user's step option: a regex over host range names replaces ProfilerStep markers.
Trace UserSteps() {
  TraceBuilder b;
  b.Step(1, 0, 300);  // one ProfilerStep around everything
  b.HostOp(b.host(), "train_step_12", "user_annotation", 0, 100);
  b.HostOp(b.host(), "train_step_13", "user_annotation", 100, 200);
  b.HostOp(b.host(), "warmup", "user_annotation", 200, 300);
  b.Kernel(7, "gemm", 20, 60);
  b.Kernel(7, "gemm", 120, 190);
  return b.Build();
}

TEST(StepMarkerTest, MatchingRangesBecomeTheStepsNumberedByTheDigitsInTheirName) {
  Trace t = UserSteps();
  EXPECT_EQ(ApplyStepMarker(&t, std::regex("^train_step")), 2u);
  TraceAnalysis a = Analyse(t);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].window.step, 12);
  EXPECT_EQ(a.steps[0].atoms.compute(), 40 * kUs);
  EXPECT_EQ(a.steps[1].window.step, 13);
  EXPECT_EQ(a.steps[1].atoms.compute(), 70 * kUs);
  EXPECT_EQ(a.steps[1].window.end, 200 * kUs);
}

TEST(StepMarkerTest, ACaptureGroupGivesTheNumberAndNamesWithoutOneCountOccurrences) {
  Trace t = UserSteps();
  EXPECT_EQ(ApplyStepMarker(&t, std::regex("step_1(\\d)")), 2u);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 2);
  EXPECT_EQ(t.steps[1].step, 3);
  Trace u = UserSteps();
  EXPECT_EQ(ApplyStepMarker(&u, std::regex("warmup|train")), 3u);
  EXPECT_EQ(u.steps[2].name, "warmup");
  EXPECT_EQ(u.steps[2].step, 3);  // no digits: its occurrence
}

TEST(StepMarkerTest, NoMatchKeepsTheTracesStepsAndSaysSo) {
  Trace t = UserSteps();
  EXPECT_EQ(ApplyStepMarker(&t, std::regex("^nothing$")), 0u);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].step, 1);
  EXPECT_EQ(t.diagnostics.Get("step_marker_not_found"), 1u);
}

TEST(ExampleDTest, IdleBreakdownSplitsHostWaitKernelWaitAndOther) {
  TraceBuilder b;
  b.Kernel(7, "K1", 0, 10, 1);
  b.Kernel(7, "K2", 12, 20, 2);
  b.Kernel(7, "K3", 45, 60, 3);
  b.Kernel(7, "K4", 100, 110, 4);
  b.Launch(1, 0);
  b.Launch(2, 11);
  b.Launch(3, 15);
  b.Launch(4, 20);
  TraceAnalysis a = Analyse(b.Build());
  ASSERT_EQ(a.idle_breakdown.size(), 1u);
  const auto& r = a.idle_breakdown[0];
  EXPECT_EQ(r.stream, "0:7");
  EXPECT_EQ(r.host_wait, 2 * kUs);
  EXPECT_EQ(r.kernel_wait, 25 * kUs);
  EXPECT_EQ(r.other, 40 * kUs);
}

TEST(PartitionTest, ComputeAndCommunicationOverlapOnDifferentStreams) {
  TraceBuilder b;
  b.Step(0, 0, 50);
  b.Kernel(7, "gemm", 0, 30);
  b.Kernel(8, "ncclKernel_AllReduce_RING_LL_Sum_float", 10, 40);
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_EQ(a.steps[0].atoms.compute_only, 10 * kUs);
  EXPECT_EQ(a.steps[0].atoms.overlap, 20 * kUs);
  EXPECT_EQ(a.steps[0].atoms.comm_only, 10 * kUs);
  EXPECT_EQ(a.steps[0].atoms.idle, 10 * kUs);
}

TEST(PartitionTest, MemcpyUnderComputeIsNotExposed) {
  TraceBuilder b;
  b.Step(0, 0, 40);
  b.Kernel(7, "gemm", 0, 30);
  b.Device(9, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 5 * kUs, 25 * kUs);
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_EQ(a.steps[0].atoms.memory_only, 0);
  EXPECT_EQ(a.steps[0].atoms.compute(), 30 * kUs);
  EXPECT_EQ(a.tracelens.total_memcpy, 20 * kUs);
  EXPECT_EQ(a.tracelens.exposed_memcpy, 0);
}

TEST(PartitionTest, ReceiveOverlappingComputeMakesExcludeReceiveNegative) {
  TraceBuilder b;
  b.Step(0, 0, 100);
  b.Kernel(7, "gemm", 0, 50);
  b.Kernel(20, "hcom_receive_1", 10, 30);  // hidden by compute
  b.Kernel(20, "hcom_send_2", 60, 65);
  TraceAnalysis a = Analyse(b.Build());
  MsprofRow m = MsprofFromStep(a.steps[0]);
  EXPECT_EQ(m.bubble, 20 * kUs);
  EXPECT_EQ(m.comm_not_overlapped, 5 * kUs);
  EXPECT_EQ(m.not_overlapped_excl_recv, -15 * kUs);
  EXPECT_EQ(m.stage, 80 * kUs);
}

TEST(PartitionTest, EmptyStepIsAllIdleWithoutPreparing) {
  TraceBuilder b;
  b.Step(1, 0, 10);
  b.Step(2, 10, 30);
  b.Kernel(7, "gemm", 2, 8);
  TraceAnalysis a = Analyse(b.Build());
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[1].atoms.idle, 20 * kUs);
  EXPECT_EQ(a.steps[1].preparing, -1);
  EXPECT_EQ(a.steps[1].kernels, 0);
  EXPECT_EQ(MsprofFromStep(a.steps[1]).free, 20 * kUs);
  EXPECT_EQ(a.steps[0].preparing, 2 * kUs);
}

TEST(PartitionTest, OverlappingKernelsOnOneStreamAreClippedAndCounted) {
  TraceBuilder b;
  b.Step(0, 0, 20);
  b.Kernel(7, "a", 0, 10);
  b.Kernel(7, "b", 8, 12);  // PDL-style overlap with a
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_EQ(a.diagnostics.Get("overlapping_same_stream_kernels"), 1u);
  EXPECT_EQ(a.steps[0].atoms.compute(), 12 * kUs);
}

TEST(PartitionTest, LastStepWithFewerLaunchesIsPartial) {
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Step(2, 100, 200);
  for (int i = 0; i < 5; ++i) {
    b.Kernel(7, "k", 10 + i * 10, 15 + i * 10, i);
    b.Launch(i, 5 + i * 10);
  }
  b.Kernel(7, "k", 110, 115, 99);
  b.Launch(99, 105);
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_FALSE(a.steps[0].window.partial);
  EXPECT_TRUE(a.steps[1].window.partial);
  EXPECT_EQ(a.steps[1].window.partial_reason, "last_step_fewer_launches");
}

TEST(PartitionTest, StageNamesOfEveryDialectAreOneVocabulary) {
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Stage(1, "", "actor_generate", 0, 40);                 // MindSpeed-RL's name
  b.Stage(1, "ref", "reference_compute_log_prob", 50, 90);
  b.Kernel(7, "gemm", 5, 35);
  TraceAnalysis a = Analyse(b.Build());
  std::vector<std::string> names;
  for (const auto& st : a.stages) names.push_back(st.role + "/" + st.name);
  EXPECT_EQ(names, (std::vector<std::string>{"rollout/rollout_generate", "/(none)",
                                             "ref/ref_compute_log_prob"}));
}

TEST(PartitionTest, StagesNestInStepsAndTheRestIsNone) {
  TraceBuilder b;
  b.Step(3, 0, 100);
  b.Stage(3, "rollout", "rollout_generate", 0, 40);
  b.Stage(3, "actor", "actor_update", 50, 90);
  b.Kernel(7, "decode", 5, 35);
  b.Kernel(7, "gemm", 55, 85);
  b.Kernel(20, "ncclDevKernel_AllReduce", 80, 95);
  TraceAnalysis a = Analyse(b.Build());
  ASSERT_EQ(a.stages.size(), 3u);
  EXPECT_EQ(a.stages[0].name, "rollout_generate");
  EXPECT_EQ(a.stages[0].role, "rollout");
  EXPECT_EQ(a.stages[0].atoms.compute(), 30 * kUs);
  EXPECT_EQ(a.stages[0].atoms.idle, 10 * kUs);
  EXPECT_EQ(a.stages[1].name, "(none)");
  EXPECT_EQ(a.stages[1].duration, 20 * kUs);  // [40,50) and [90,100)
  EXPECT_EQ(a.stages[1].atoms.comm_only, 5 * kUs);
  EXPECT_EQ(a.stages[2].name, "actor_update");
  EXPECT_EQ(a.stages[2].atoms.overlap, 5 * kUs);
  EXPECT_EQ(a.stages[2].atoms.comm_only, 5 * kUs);
  ExpectNoInvariantViolations(a);
}

TEST(OpStatsTest, NestedHostOpsGetSelfTimeAndPercentiles) {
  TraceBuilder b;
  uint32_t th = b.host();
  for (int i = 0; i < 4; ++i) {
    b.HostOp(th, "aten::linear", "cpu_op", i * 100, i * 100 + 50);
    b.HostOp(th, "aten::addmm", "cpu_op", i * 100 + 10, i * 100 + 10 + (i + 1) * 5);
  }
  TraceAnalysis a = Analyse(b.Build());
  ASSERT_EQ(a.host_ops.size(), 2u);
  const OpStat& lin = a.host_ops[0];
  EXPECT_EQ(lin.name, "aten::linear");
  EXPECT_EQ(lin.count, 4);
  EXPECT_EQ(lin.total, 200 * kUs);
  EXPECT_EQ(lin.self, 200 * kUs - 50 * kUs);
  const OpStat& mm = a.host_ops[1];
  EXPECT_EQ(mm.min, 5 * kUs);
  EXPECT_EQ(mm.max, 20 * kUs);
  EXPECT_EQ(mm.p50, 10 * kUs);
  EXPECT_EQ(mm.p99, 20 * kUs);
  EXPECT_DOUBLE_EQ(mm.mean, 12.5 * kUs);
}

// A capture of a share p of the operator calls (ops_sampling): counts, totals and self times
// are the sample's × 1/p, the sampled children subtracted 1/p times; the distribution's
// figures are the sample's own; diagnostics say the rows are estimates.
TEST(OpStatsTest, ASampledCaptureGivesEstimatesScaledByTheShare) {
  TraceBuilder b;
  uint32_t th = b.host();
  b.Step(1, 0, 1000);
  // The sample holds 4 calls of linear, one with a sampled child addmm of 10 µs.
  for (int i = 0; i < 4; ++i) b.HostOp(th, "aten::linear", "operator", i * 100, i * 100 + 50);
  b.HostOp(th, "aten::addmm", "operator", 10, 20);
  // A runtime call (recorded whole, not sampled) counts once.
  b.HostOp(th, "cudaLaunchKernel", "cuda_runtime", 300, 302);
  b.trace().ops_sampling = 0.25;
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_DOUBLE_EQ(a.ops_sampling, 0.25);
  ASSERT_EQ(a.host_ops.size(), 3u);
  const OpStat& lin = a.host_ops[0];
  EXPECT_EQ(lin.name, "aten::linear");
  EXPECT_EQ(lin.count, 16);
  EXPECT_EQ(lin.total, 800 * kUs);
  EXPECT_EQ(lin.self, (200 - 4 * 10 - 2) * 4 * kUs);  // the addmm stands for four, the launch for one
  EXPECT_EQ(lin.min, 50 * kUs);
  EXPECT_DOUBLE_EQ(lin.mean, 50.0 * kUs);
  const OpStat& mm = a.host_ops[1];
  EXPECT_EQ(mm.count, 4);
  EXPECT_EQ(mm.total, 40 * kUs);
  const OpStat& launch = a.host_ops[2];
  EXPECT_EQ(launch.name, "cudaLaunchKernel");
  EXPECT_EQ(launch.count, 1);
  EXPECT_EQ(launch.total, 2 * kUs);
  EXPECT_EQ(a.diagnostics.Get("operators_sampled"), 5u);
  EXPECT_EQ(a.diagnostics.Get("operators_sampled_cpu_compute"), 1u);

  // The same calls unsampled: exact, no such diagnostics.
  TraceBuilder e;
  th = e.host();
  e.Step(1, 0, 1000);
  for (int i = 0; i < 4; ++i) e.HostOp(th, "aten::linear", "operator", i * 100, i * 100 + 50);
  e.HostOp(th, "aten::addmm", "operator", 10, 20);
  TraceAnalysis x = Analyse(e.Build());
  EXPECT_EQ(x.host_ops[0].count, 4);
  EXPECT_EQ(x.host_ops[0].self, 190 * kUs);
  EXPECT_EQ(x.diagnostics.Get("operators_sampled"), 0u);
}

// Kineto-style trace (no external ids): a kernel's device time goes to the innermost host
// operator enclosing the cudaLaunchKernel with its correlation id (HTA / TraceLens).
TEST(OpStatsTest, HostOpsCarryTheDeviceTimeOfTheKernelsTheyLaunched) {
  TraceBuilder b;
  uint32_t th = b.host();
  b.HostOp(th, "aten::linear", "cpu_op", 0, 50);
  b.HostOp(th, "aten::addmm", "cpu_op", 10, 30);
  b.Launch(1, 12);  // inside addmm
  b.Launch(2, 40);  // inside linear only
  b.HostOp(th, "aten::linear", "cpu_op", 100, 150);
  size_t mm2 = b.HostOp(th, "aten::addmm", "cpu_op", 105, 120);
  b.trace().shapes[mm2] = b.trace().Intern("[[8, 4], [4, 4]]");
  b.Launch(3, 110);
  b.Launch(4, 200);  // outside every operator: attributed to none
  b.Kernel(7, "gemm", 60, 80, 1);
  b.Kernel(7, "bias", 80, 85, 2);
  b.Kernel(7, "gemm", 160, 170, 3);
  b.Kernel(7, "orphan", 210, 212, 4);
  b.Kernel(7, "unlaunched", 220, 223, 99);  // no launch with its correlation id
  TraceAnalysis a = Analyse(b.Build());
  std::map<std::string, OpStat> ops;
  for (const OpStat& o : a.host_ops) ops[o.name] = o;
  ASSERT_TRUE(ops.count("aten::addmm"));
  EXPECT_EQ(ops["aten::addmm"].device_total, 30 * kUs);
  EXPECT_EQ(ops["aten::addmm"].kernels, 2);
  EXPECT_EQ(ops["aten::linear"].device_total, 5 * kUs);  // not inclusive of addmm's kernels
  EXPECT_EQ(ops["aten::linear"].kernels, 1);
  EXPECT_EQ(ops["cudaLaunchKernel"].device_total, 0);  // the launch itself is not the operator
  EXPECT_EQ(ops["cudaLaunchKernel"].kernels, 0);
  int64_t kernels = 0;
  for (const OpStat& o : a.host_ops) kernels += o.kernels;
  EXPECT_EQ(kernels, 3);  // orphan and unlaunched belong to no operator
  for (const OpStat& o : a.kernels) EXPECT_EQ(o.kernels, 0);
  ASSERT_EQ(a.host_ops_by_shape.size(), 1u);
  EXPECT_EQ(a.host_ops_by_shape[0].device_total, 10 * kUs);
  EXPECT_EQ(a.host_ops_by_shape[0].kernels, 1);
  ExpectNoInvariantViolations(a);
}

TEST(CpuOnlyTest, HostOpsAreComputeAndGlooCollectivesAreCommunication) {
  TraceBuilder b;
  uint32_t main = b.host();
  uint32_t worker = b.trace().ThreadTrack(1, 2);
  b.Step(1, 0, 100);
  b.HostOp(main, "aten::mm", "cpu_op", 10, 40);
  b.HostOp(main, "c10d::allreduce_", "cpu_op", 40, 60);  // the thread waits: not compute
  b.HostOp(main, "aten::add", "cpu_op", 60, 70);
  b.HostOp(worker, "gloo:all_reduce", "cpu_op", 30, 55);
  TraceAnalysis a = Analyse(b.Build());
  EXPECT_TRUE(a.cpu_only);
  const Atoms& at = a.steps[0].atoms;
  EXPECT_EQ(at.compute(), 40 * kUs);   // [10,40) [60,70)
  EXPECT_EQ(at.comm(), 30 * kUs);      // [30,60)
  EXPECT_EQ(at.overlap, 10 * kUs);     // [30,40)
  EXPECT_EQ(at.idle, 40 * kUs);
  ExpectNoInvariantViolations(a);
}

TEST(ClassifierTest, DefaultsCoverNcclGenerationsRcclHcclAndCopies) {
  TraceBuilder b;
  size_t rows[] = {
      b.Kernel(1, "ncclKernel_AllReduce_RING_LL_Sum_float", 0, 1),
      b.Kernel(1, "ncclDevKernel_Generic", 1, 2),
      b.Kernel(1, "rcclGenericKernel", 2, 3),
      b.Kernel(1, "hcom_allReduce_", 3, 4),
      b.Device(1, "Memcpy DtoD (Device -> Device)", "gpu_memcpy", 4000, 5000),
      b.Device(1, "hipMemsetAsync", "kernel", 5000, 6000),
      b.Device(1, "Event Sync", "kernel", 6000, 7000),
      b.Device(1, "weird", "mystery_cat", 7000, 8000),
      b.Kernel(1, "void gemm<float>", 8, 9),
  };
  (void)rows;
  Trace t = b.Build();
  Diagnostics d;
  Classification c = Classifier::Default().Classify(t, &d);
  auto class_of = [&](const std::string& name) {
    for (size_t i = 0; i < t.size(); ++i)
      if (t.str(t.name[i]) == name) return c.of[i];
    return WorkClass::kMarker;
  };
  EXPECT_EQ(class_of("ncclKernel_AllReduce_RING_LL_Sum_float"), WorkClass::kCommunication);
  EXPECT_EQ(class_of("ncclDevKernel_Generic"), WorkClass::kCommunication);
  EXPECT_EQ(class_of("rcclGenericKernel"), WorkClass::kCommunication);
  EXPECT_EQ(class_of("hcom_allReduce_"), WorkClass::kCommunication);
  EXPECT_EQ(class_of("Memcpy DtoD (Device -> Device)"), WorkClass::kMemcpy);
  EXPECT_EQ(class_of("hipMemsetAsync"), WorkClass::kMemset);
  EXPECT_EQ(class_of("Event Sync"), WorkClass::kSync);
  EXPECT_EQ(class_of("weird"), WorkClass::kUnclassified);
  EXPECT_EQ(class_of("void gemm<float>"), WorkClass::kCompute);
  EXPECT_EQ(d.Get("unclassified_device_events"), 1u);
}

TEST(ClassifierTest, KernelsLaunchedFromRecordParamCommsAreCommunication) {
  TraceBuilder b;
  b.HostOp(b.host(), "record_param_comms", "cpu_op", 0, 10);
  b.Launch(5, 1);
  b.Kernel(3, "custom_a2a_kernel", 2, 8, 5);
  Trace t = b.Build();
  Classification c = Classifier::Default().Classify(t, nullptr);
  for (size_t i = 0; i < t.size(); ++i)
    if (t.str(t.name[i]) == "custom_a2a_kernel") EXPECT_EQ(c.of[i], WorkClass::kCommunication);
}

TEST(ClassifierTest, UserRulesComeFirstAndBadRulesAreRejectedWithTheirIndex) {
  auto ok = Classifier::FromRulesYaml(
      "rules:\n  - name: '^my_dispatch'\n    track: device\n    class: communication\n", "r.yaml");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rules().front().name, "^my_dispatch");
  EXPECT_GT(ok->rules().size(), Classifier::Default().rules().size());
  auto bad_class = Classifier::FromRulesYaml("rules:\n  - {name: x, class: gpu}\n", "r.yaml");
  ASSERT_FALSE(bad_class.ok());
  EXPECT_NE(bad_class.status().message().find("r.yaml: rules[0].class"), std::string::npos);
  auto bad_regex = Classifier::FromRulesYaml("rules:\n  - {name: '([', class: compute}\n", "r.yaml");
  EXPECT_FALSE(bad_regex.ok());
  auto no_list = Classifier::FromRulesYaml("rules: 3\n", "r.yaml");
  EXPECT_FALSE(no_list.ok());
}

TEST(ClassifierTest, RecvNamesAreRecognised) {
  EXPECT_TRUE(IsRecvName("hcom_receive_3", ""));
  EXPECT_TRUE(IsRecvName("ncclDevKernel_SendRecv", "recv"));
  EXPECT_FALSE(IsRecvName("ncclDevKernel_SendRecv", ""));
  EXPECT_TRUE(IsRecvName("gloo:recv", ""));
  EXPECT_FALSE(IsRecvName("hcom_send_1", ""));
}

TEST(PartitionTest, RandomIntervalsMatchAOneNanosecondBruteForce) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<WorkInterval> work;
    const uint8_t bits[] = {kBitCompute, kBitComm, kBitMemcpy, kBitMemset, kBitOther};
    std::uniform_int_distribution<int> pos(0, 400), len(0, 60), cls(0, 4);
    for (int i = 0; i < 40; ++i) {
      int s = pos(rng);
      work.push_back({s, s + len(rng), bits[cls(rng)], false, -1});
    }
    Timeline tl = Timeline::Build(work);
    const int64_t ws = pos(rng) / 2, we = ws + pos(rng);
    Atoms got = tl.Histogram(ws, we).atoms();
    Atoms want;
    for (int64_t t = ws; t < we; ++t) {
      uint8_t m = 0;
      for (const auto& w : work)
        if (w.start <= t && t < w.end) m |= w.bit;
      if ((m & kBitCompute) && (m & kBitComm)) ++want.overlap;
      else if (m & kBitCompute) ++want.compute_only;
      else if (m & kBitComm) ++want.comm_only;
      else if (m & (kBitMemcpy | kBitMemset)) ++want.memory_only;
      else if (m & kBitOther) ++want.other_only;
      else ++want.idle;
    }
    EXPECT_EQ(got.compute_only, want.compute_only) << round;
    EXPECT_EQ(got.comm_only, want.comm_only) << round;
    EXPECT_EQ(got.overlap, want.overlap) << round;
    EXPECT_EQ(got.memory_only, want.memory_only) << round;
    EXPECT_EQ(got.other_only, want.other_only) << round;
    EXPECT_EQ(got.idle, want.idle) << round;
    std::vector<std::pair<int64_t, int64_t>> c;
    for (const auto& w : work)
      if (w.bit == kBitCompute) c.push_back({w.start, w.end});
    EXPECT_EQ(MergedSet::Build(c).Length(ws, we), got.compute()) << round;
  }
}

TEST(StageAcrossRanksTest, FindsTheSlowestRankPerStage) {
  std::vector<InputResult> results(2);
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b;
    b.trace().rank = r;
    b.Step(1, 0, 100);
    b.Stage(1, "actor", "actor_update", 10, r == 0 ? 50 : 90);
    b.Kernel(7, "gemm", 10, 40);
    results[r].name = "rank" + std::to_string(r);
    results[r].analysis = Analyse(b.Build());
  }
  Table t = StageAcrossRanksTable(results);
  ASSERT_EQ(t.rows.size(), 2u);  // (none) and actor_update of step 1
  const auto& row = t.rows[1];
  EXPECT_EQ(std::get<std::string>(row[2]), "actor_update");
  EXPECT_EQ(std::get<int64_t>(row[3]), 2);
  EXPECT_DOUBLE_EQ(std::get<double>(row[4]), 40);  // min duration µs
  EXPECT_DOUBLE_EQ(std::get<double>(row[6]), 80);  // max
  EXPECT_DOUBLE_EQ(std::get<double>(row[7]), 40.0 / 60.0);
  EXPECT_EQ(std::get<std::string>(row[8]), "rank1");
  EXPECT_EQ(std::get<int64_t>(row[9]), 1);
  EXPECT_DOUBLE_EQ(std::get<double>(row[10]), 50);  // rank 1 idles 50 µs in the stage
}

TEST(MergedSetTest, LengthInsideAWindowMatchesBruteForce) {
  MergedSet m = MergedSet::Build({{0, 10}, {10, 15}, {20, 30}, {25, 26}, {40, 40}});
  EXPECT_EQ(m.intervals().size(), 2u);  // touching intervals merge; empty dropped
  EXPECT_EQ(m.Length(), 25);
  EXPECT_EQ(m.Length(5, 22), 12);
  EXPECT_EQ(m.Length(15, 20), 0);
  EXPECT_EQ(m.Length(-5, 100), 25);
  auto d = Subtract({{0, 10}, {20, 30}}, {{5, 22}, {25, 26}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], (std::pair<int64_t, int64_t>{0, 5}));
  EXPECT_EQ(d[1], (std::pair<int64_t, int64_t>{22, 25}));
  EXPECT_EQ(d[2], (std::pair<int64_t, int64_t>{26, 30}));
}

}  // namespace
}  // namespace rlprof::analysis

namespace rlprof::analysis {
namespace {

// Kineto writes an operator's `External id` in the column that holds launch correlation ids,
// and the two id spaces collide: only runtime calls launch (the H100 GRPO trace, 477 kernels).
TEST(LaunchTimesTest, AnOperatorWhoseExternalIdEqualsAKernelsCorrelationIsNotItsLaunch) {
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"External id": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 200, "dur": 50,
     "args": {"External id": 8}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
     "dur": 5, "args": {"External id": 3, "correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 30,
     "dur": 5, "args": {"External id": 4, "correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 4,
     "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 0, "tid": 7, "ts": 40, "dur": 4,
     "args": {"device": 0, "stream": 7, "correlation": 8, "External id": 4}}]})";
  auto t = ReadTraceBytes(json, "collide.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::vector<int64_t> launch = LaunchTimes(*t);
  const Classification c = Classifier::Default().Classify(*t, nullptr);
  int kernels = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->tracks[t->track[i]].type != TrackType::kDeviceStream) continue;
    ++kernels;
    const std::string& n = t->str(t->name[i]);
    EXPECT_EQ(launch[i], n == "gemm" ? 10'000 : 30'000) << n;
    // Not communication: the operator `nccl:all_reduce` has External id 8, not the launch.
    EXPECT_EQ(c.of[i], WorkClass::kCompute) << n;
  }
  EXPECT_EQ(kernels, 2);
}

}  // namespace
}  // namespace rlprof::analysis
