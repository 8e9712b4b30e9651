// Activity lanes (activity.h) on hand-built traces whose spans are worked out below.
#include "src/analysis/passes/activity.h"

#include <gtest/gtest.h>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/model/test_traces.h"

namespace rlprof::analysis {
namespace {

using testing::ExampleA;
using testing::kUs;
using testing::TraceBuilder;

ActivityLanesResult Lanes(const Trace& t, size_t max_spans, size_t max_device = 8, size_t max_host = 4) {
  Diagnostics d;
  Classification c = Classifier::Default().Classify(t, &d);
  return ActivityLanes(t, c, {.max_spans = max_spans, .max_device_lanes = max_device, .max_host_lanes = max_host});
}

const ActivityLane* Find(const ActivityLanesResult& r, const std::string& name) {
  for (const auto& l : r.lanes)
    if (l.name == name) return &l;
  return nullptr;
}

TEST(ActivityLanes, OneSpanPerEventWithinBudget) {
  // Example A: stream 7 has a memset, three kernels and a wait (a sync: never activity);
  // stream 20 three NCCL kernels; stream 9 two copies.
  ActivityLanesResult r = Lanes(ExampleA(), 100);
  ASSERT_EQ(r.lanes.size(), 3u);  // device lanes only: the host holds a step marker alone
  EXPECT_EQ(r.lanes[0].name, "device 0 stream 7");
  EXPECT_EQ(r.lanes[1].name, "device 0 stream 9");
  EXPECT_EQ(r.lanes[2].name, "device 0 stream 20");
  const ActivityLane& s7 = r.lanes[0];
  EXPECT_TRUE(s7.device);
  ASSERT_EQ(s7.spans.size(), 4u);
  EXPECT_EQ(s7.events, 4);
  EXPECT_EQ(s7.spans[0].cls, WorkClass::kMemset);
  EXPECT_EQ(s7.spans[1].start, 5 * kUs);
  EXPECT_EQ(s7.spans[1].end, 30 * kUs);
  EXPECT_EQ(s7.spans[1].top, "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(s7.busy, (2 + 25 + 20 + 10) * kUs);
  EXPECT_EQ(r.lanes[2].spans[0].cls, WorkClass::kCommunication);
  EXPECT_EQ(r.lanes[1].spans[0].cls, WorkClass::kMemcpy);
}

TEST(ActivityLanes, CoarsensAcrossTheShortestGaps) {
  // Stream 7 at two spans: the largest gap (30 → 40 and 60 → 70 are 10 µs; 4 → 5 is 1 µs) is
  // kept; ties merge, so the lane keeps the first of the equal gaps that fit and merges more.
  ActivityLanesResult r = Lanes(ExampleA(), 2);
  const ActivityLane* s7 = Find(r, "device 0 stream 7");
  ASSERT_NE(s7, nullptr);
  ASSERT_LE(s7->spans.size(), 2u);
  int64_t busy = 0, count = 0;
  for (const auto& s : s7->spans) {
    busy += s.busy;
    count += s.count;
    EXPECT_LE(s.busy, s.end - s.start);
  }
  EXPECT_EQ(busy, (2 + 25 + 20 + 10) * kUs);  // busy time is kept exactly
  EXPECT_EQ(count, 4);
  // One span: everything, compute dominant, longest event the GEMM.
  r = Lanes(ExampleA(), 1);
  s7 = Find(r, "device 0 stream 7");
  ASSERT_EQ(s7->spans.size(), 1u);
  EXPECT_EQ(s7->spans[0].start, 2 * kUs);
  EXPECT_EQ(s7->spans[0].end, 80 * kUs);
  EXPECT_EQ(s7->spans[0].cls, WorkClass::kCompute);
  EXPECT_EQ(s7->spans[0].top, "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(s7->spans[0].top_dur, 25 * kUs);
}

TEST(ActivityLanes, CoarsenSpansKeepsTheLargestGaps) {
  std::vector<ActivitySpan> in;
  // Events at [0,1) [2,3) [10,11) [12,13) [40,41): gaps 1, 7, 1, 27.
  for (int64_t s : {0, 2, 10, 12, 40}) in.push_back({s, s + 1, 1, 1, WorkClass::kCompute, "k", 1});
  auto out = CoarsenSpans(in, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].start, 0);
  EXPECT_EQ(out[0].end, 3);
  EXPECT_EQ(out[0].busy, 2);
  EXPECT_EQ(out[1].start, 10);
  EXPECT_EQ(out[1].end, 13);
  EXPECT_EQ(out[2].start, 40);
  EXPECT_EQ(out[2].count, 1);
  // Overlapping spans always merge, and busy never exceeds the extent.
  std::vector<ActivitySpan> ov = {{0, 10, 10, 1, WorkClass::kCompute, "a", 10},
                                  {5, 12, 7, 1, WorkClass::kCommunication, "b", 7}};
  out = CoarsenSpans(ov, 10);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].busy, 12);
  EXPECT_EQ(out[0].cls, WorkClass::kCompute);
  EXPECT_TRUE(CoarsenSpans({}, 5).empty());
}

TEST(ActivityLanes, HostLanesAreOutermostOperatorsInsideMarkers) {
  TraceBuilder b;
  b.Stage(1, "actor", "update_actor", 0, 100);
  const uint32_t main = b.host();
  b.HostOp(main, "aten::linear", "cpu_op", 10, 40);
  b.HostOp(main, "aten::addmm", "cpu_op", 12, 38);  // inside aten::linear: covered
  b.HostOp(main, "aten::relu", "cpu_op", 50, 55);
  const uint32_t loader = b.trace().ThreadTrack(1, 2);
  b.trace().tracks[loader].name = "loader";
  b.HostOp(loader, "aten::copy_", "cpu_op", 20, 30);
  const uint32_t kineto = b.trace().ThreadTrack(1, 3);
  b.trace().tracks[kineto].name = "thread 3 (python)";  // Kineto's own thread names
  b.HostOp(kineto, "aten::add", "cpu_op", 60, 61);
  ActivityLanesResult r = Lanes(b.Build(), 100);
  ASSERT_EQ(r.lanes.size(), 3u);
  EXPECT_NE(Find(r, "thread 3 (python)"), nullptr);
  const ActivityLane* m = Find(r, "thread 1");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->device);
  ASSERT_EQ(m->spans.size(), 2u);
  EXPECT_EQ(m->spans[0].top, "aten::linear");
  EXPECT_EQ(m->spans[0].cls, WorkClass::kHost);
  EXPECT_EQ(m->busy, 35 * kUs);
  EXPECT_EQ(m->events, 2);
  const ActivityLane* l = Find(r, "thread 2 (loader)");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->busy, 10 * kUs);
}

TEST(ActivityLanes, KeepsTheBusiestLanesAndCountsTheRest) {
  ActivityLanesResult r = Lanes(ExampleA(), 100, /*max_device=*/2);
  ASSERT_EQ(r.lanes.size(), 2u);
  EXPECT_EQ(r.device_lanes_left_out, 1);
  // Stream 7 (57 µs) and stream 20 (35 µs) are busier than stream 9 (13 µs).
  EXPECT_EQ(r.lanes[0].name, "device 0 stream 7");
  EXPECT_EQ(r.lanes[1].name, "device 0 stream 20");
  EXPECT_TRUE(Lanes(ExampleA(), 0).lanes.empty());
}

TEST(ActivityLanes, AnalyseTraceFillsThemOnlyWhenAsked) {
  Trace t = ExampleA();
  TraceAnalysis off = AnalyseTrace(t, Classifier::Default(), {});
  EXPECT_TRUE(off.activity.empty());
  AnalysisOptions o;
  o.activity_spans = 50;
  TraceAnalysis on = AnalyseTrace(t, Classifier::Default(), o);
  EXPECT_EQ(on.activity.size(), 3u);
  EXPECT_EQ(on.activity_lanes_left_out, 0);
}

}  // namespace
}  // namespace rlprof::analysis
