#include "rlprof/config/plan.h"

#include <gtest/gtest.h>

namespace rlprof::config {
namespace {

RolePlan Role(std::string name, bool enabled, std::vector<int64_t> ranks,
              CaptureMode mode = CaptureMode::kEndToEnd) {
  RolePlan r;
  r.role = name;
  r.block_path = name + ".profiler";
  r.enabled = enabled;
  r.ranks = std::move(ranks);
  r.mode = mode;
  return r;
}

Plan BasePlan() {
  Plan p;
  p.tool = Tool::kRlprof;
  p.steps.kind = StepSelection::Kind::kList;
  p.steps.list = {1, 2, 5};
  return p;
}

TEST(StepSelectionTest, ListRangeAndAllContainTheRightSteps) {
  StepSelection s;
  s.kind = StepSelection::Kind::kList;
  s.list = {1, 2, 5};
  EXPECT_TRUE(s.Contains(2));
  EXPECT_FALSE(s.Contains(3));
  EXPECT_EQ(s.ToString(), "[1, 2, 5]");
  s.kind = StepSelection::Kind::kRange;
  s.start = 3;
  s.end = 5;
  EXPECT_FALSE(s.Contains(5));
  EXPECT_TRUE(s.Contains(4));
  EXPECT_EQ(s.Expand(10), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(s.ToString(), "[3, 5)");
  s.kind = StepSelection::Kind::kAll;
  EXPECT_EQ(s.Expand(3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(s.Contains(0));
}

TEST(ResolveForProcessTest, UnionProfilesIfAnyHostedRoleSelectsTheRank) {
  Plan p = BasePlan();
  p.roles.push_back(Role("actor", true, {0}));
  p.roles.push_back(Role("ref", true, {1}, CaptureMode::kDiscrete));
  p.roles.back().stages = {"ref_compute_log_prob"};
  auto r0 = ResolveForProcess(p, {"actor", "rollout", "ref"}, 0);
  EXPECT_TRUE(r0.enabled);
  EXPECT_EQ(r0.mode, CaptureMode::kEndToEnd);
  auto r1 = ResolveForProcess(p, {"actor", "rollout", "ref"}, 1);
  EXPECT_TRUE(r1.enabled);
  EXPECT_EQ(r1.mode, CaptureMode::kDiscrete);
  EXPECT_EQ(r1.roles, (std::vector<std::string>{"ref"}));
  EXPECT_FALSE(ResolveForProcess(p, {"actor", "rollout", "ref"}, 2).enabled);
}

TEST(ResolveForProcessTest, UnionOfStageListsWithEmptyMeaningAll) {
  Plan p = BasePlan();
  p.roles.push_back(Role("actor", true, {0}, CaptureMode::kDiscrete));
  p.roles.back().stages = {"actor_update"};
  p.roles.push_back(Role("ref", true, {0}, CaptureMode::kDiscrete));
  p.roles.back().stages = {"ref_compute_log_prob"};
  auto r = ResolveForProcess(p, {"actor", "ref"}, 0);
  EXPECT_EQ(r.stages, (std::vector<std::string>{"actor_update", "ref_compute_log_prob"}));
  EXPECT_TRUE(r.StageSelected("actor_update"));
  EXPECT_FALSE(r.StageSelected("rollout_generate"));
  p.roles.back().stages.clear();
  EXPECT_TRUE(ResolveForProcess(p, {"actor", "ref"}, 0).stages.empty());
}

TEST(ResolveForProcessTest, PriorityLetsTheActorBlockDecideAlone) {
  Plan p = BasePlan();
  p.combine = CombinePolicy::kPriority;
  p.roles.push_back(Role("actor", false, {}));
  p.roles.push_back(Role("ref", true, {0}));
  auto r = ResolveForProcess(p, {"actor", "rollout", "ref"}, 0);
  EXPECT_FALSE(r.enabled);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("ref.profiler is ignored"), std::string::npos);
}

TEST(ResolveForProcessTest, AllRanksSelectsEveryRank) {
  Plan p = BasePlan();
  p.roles.push_back(Role("critic", true, {}));
  p.roles.back().all_ranks = true;
  EXPECT_TRUE(ResolveForProcess(p, {"critic"}, 17).enabled);
  EXPECT_FALSE(ResolveForProcess(p, {"actor"}, 17).enabled);
}

TEST(ResolveForProcessTest, NoStepsMeansNothingIsProfiled) {
  Plan p = BasePlan();
  p.steps.kind = StepSelection::Kind::kNone;
  p.roles.push_back(Role("actor", true, {0}));
  EXPECT_FALSE(p.profiling_enabled());
  EXPECT_FALSE(ResolveForProcess(p, {"actor"}, 0).enabled);
}

}  // namespace
}  // namespace rlprof::config
