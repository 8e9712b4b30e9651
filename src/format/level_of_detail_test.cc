// The merged run timeline's level of detail (format::ApplyLevelOfDetail) and its grouping of
// processes by role (BuildTraceLayout).
#include <gtest/gtest.h>

#include "src/format/export.h"
#include "src/format/sample_capture.h"
#include "src/format/trace_layout.h"

namespace rlprof::format {
namespace {

Event Ev(int64_t ts, int64_t dur, uint16_t track, Category cat, uint32_t arg0 = 0) {
  Event e{};
  e.ts_ns = ts;
  e.payload = dur;
  e.name = 1;
  e.track = track;
  e.kind = EventKind::kComplete;
  e.category = cat;
  e.arg0 = arg0;
  return e;
}

// Rank `rank`: two steps (step 1 at 0–100, step 2 at 100–200), a stage, an operator and a
// kernel (on its own device track) in each.
Capture TwoSteps(int64_t rank, const std::string& role) {
  Capture c;
  c.has_manifest = true;
  c.manifest.rank = rank;
  c.manifest.role = role;
  c.manifest.host = "h";
  c.manifest.pid = 100 + rank;
  c.manifest.steps = {1};
  c.raw.strings = {"", "x"};
  c.raw.tracks = {{1, TrackKind::kThread, 1, 1, "main"}, {2, TrackKind::kDeviceStream, 7, 1, "s"}};
  for (int64_t s = 0; s < 2; ++s) {
    const int64_t t = s * 100;
    c.raw.events.push_back(Ev(t, 100, 1, Category::kStep, static_cast<uint32_t>(s + 1)));
    c.raw.events.push_back(Ev(t + 1, 90, 1, Category::kStage));
    c.raw.events.push_back(Ev(t + 2, 10, 1, Category::kOperator));
    c.raw.events.push_back(Ev(t + 3, 10, 2, Category::kKernel));
  }
  return c;
}

size_t Count(const Capture& c, Category cat) {
  size_t n = 0;
  for (const Event& e : c.raw.events) n += e.category == cat;
  return n;
}

TEST(LevelOfDetailTest, KeepsStagesEverywhereAndDetailOnlyForTheRanksAndStepsAsked) {
  std::vector<Capture> caps = {TwoSteps(0, "actor"), TwoSteps(1, "actor")};
  LevelOfDetail lod;
  lod.ranks = {1};
  lod.steps = {2};
  EXPECT_EQ(ApplyLevelOfDetail(lod, &caps), 4u + 2u);  // rank 0: all 4; rank 1: step 1's two
  for (const Capture& c : caps) {
    EXPECT_EQ(Count(c, Category::kStep), 2u);
    EXPECT_EQ(Count(c, Category::kStage), 2u);
  }
  EXPECT_EQ(Count(caps[0], Category::kOperator), 0u);
  EXPECT_EQ(caps[0].raw.tracks.size(), 1u);  // the device stream has no event left: dropped
  ASSERT_EQ(Count(caps[1], Category::kOperator), 1u);
  for (const Event& e : caps[1].raw.events)
    if (e.category == Category::kOperator || e.category == Category::kKernel) EXPECT_GE(e.ts_ns, 100);
  EXPECT_EQ(caps[1].raw.tracks.size(), 2u);
}

TEST(LevelOfDetailTest, StagesOnlyAndNoOptionAtAll) {
  std::vector<Capture> caps = {TwoSteps(0, "actor")};
  EXPECT_EQ(ApplyLevelOfDetail({}, &caps), 0u);  // inactive: everything kept
  EXPECT_EQ(caps[0].raw.events.size(), 8u);
  LevelOfDetail lod;
  lod.stages_only = true;
  EXPECT_EQ(ApplyLevelOfDetail(lod, &caps), 4u);
  EXPECT_EQ(caps[0].raw.events.size(), 4u);
}

TEST(LevelOfDetailTest, ProcessesAreGroupedByRoleInPipelineOrderThenRank) {
  std::vector<Capture> caps = {TwoSteps(0, "actor"), TwoSteps(1, "rollout"), TwoSteps(2, "zeta"),
                               TwoSteps(3, "rollout"), TwoSteps(4, "ref")};
  const TraceLayout l = BuildTraceLayout(caps);
  auto sort_of = [&](size_t i) { return l.processes[l.captures[i].host_process].sort_index; };
  // rollout (ranks 1, 3) < ref (4) < actor (0) < other roles (zeta, 2).
  EXPECT_LT(sort_of(1), sort_of(3));
  EXPECT_LT(sort_of(3), sort_of(4));
  EXPECT_LT(sort_of(4), sort_of(0));
  EXPECT_LT(sort_of(0), sort_of(2));
  // One role in the whole set: sort indices stay the ranks (existing traces unchanged).
  const TraceLayout one = BuildTraceLayout(SampleCaptures());
  EXPECT_EQ(one.processes[one.captures[1].host_process].sort_index, 1);
}

}  // namespace
}  // namespace rlprof::format
