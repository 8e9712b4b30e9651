#include "src/config/loader.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "src/config/captures.h"

namespace rlprof::config {
namespace {

Plan MustLoad(const std::string& yaml, std::vector<std::string> overrides = {},
              LoadOptions opts = {}) {
  auto p = LoadPlanFromString(yaml, "t.yaml", overrides, opts);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : Plan{};
}

std::string MustFail(const std::string& yaml, std::vector<std::string> overrides = {},
                     LoadOptions opts = {}) {
  auto p = LoadPlanFromString(yaml, "t.yaml", overrides, opts);
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : p.status().message();
}

TEST(LoaderTest, FullVerlTrainerConfigLoadsAndOnlyProfilerBlocksMatter) {
  std::string path = std::string(RLPROF_SOURCE_DIR) + "/test/data/ppo_trainer_full.yaml";
  auto off = LoadPlan(path, {}, {});
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->dialect, Dialect::kVerlGen3);
  EXPECT_FALSE(off->profiling_enabled());
  auto on = LoadPlan(path,
                     {"global_profiler.tool=npu", "global_profiler.steps=[2]",
                      "actor_rollout_ref.actor.profiler.enable=true",
                      "actor_rollout_ref.actor.profiler.tool_config.npu.discrete=true"},
                     {});
  ASSERT_TRUE(on.ok()) << on.status().message();
  const RolePlan* rollout = on->FindRole("rollout");
  ASSERT_NE(rollout, nullptr);
  // The rollout block interpolates the actor's enable and tool_config.
  EXPECT_TRUE(rollout->enabled);
  EXPECT_EQ(rollout->mode, CaptureMode::kDiscrete);
  EXPECT_EQ(rollout->ranks, (std::vector<int64_t>{0}));  // enable + empty ranks ⇒ rank 0
}

TEST(LoaderTest, OverridesFollowHydraGrammar) {
  const char* yaml = "global_profiler: {tool: torch, steps: [1]}\n"
                     "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n";
  Plan p = MustLoad(yaml, {"global_profiler.steps=[4, 5]", "+global_profiler.profile_continuous_steps=true",
                           "++global_profiler.save_path=/tmp/x"});
  EXPECT_EQ(p.steps.list, (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(p.continuous_steps);
  EXPECT_EQ(p.save_path, "/tmp/x");
  Plan q = MustLoad(yaml, {"~global_profiler.steps"});
  EXPECT_EQ(q.steps.kind, StepSelection::Kind::kNone);
  EXPECT_NE(MustFail(yaml, {"global_profiler.steps"}).find("expected KEY=VALUE"), std::string::npos);
  Plan n = MustLoad(yaml, {"global_profiler.steps=null"});  // null selects nothing, validly
  EXPECT_FALSE(n.profiling_enabled());
}

TEST(LoaderTest, NullStepsSelectNothingWithAWarning) {
  auto p = LoadPlanFromString("global_profiler: {tool: torch, steps: null}\n"
                              "actor_rollout_ref: {actor: {profiler: {enable: true}}}\n",
                              "t.yaml", {}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->profiling_enabled());
  ASSERT_FALSE(p->warnings.empty());
}

TEST(LoaderTest, InterpolationsResolveAbsoluteRelativeSelectAndEnv) {
  ::setenv("RLPROF_TEST_SAVE", "/env/path", 1);
  Plan p = MustLoad(
      "defaults_block: {tool: nsys, ranks: [2, 3]}\n"
      "global_profiler:\n  tool: ${defaults_block.tool}\n  steps: [1]\n"
      "  save_path: ${oc.env:RLPROF_TEST_SAVE,/fallback}\n"
      "actor_rollout_ref:\n  actor:\n    profiler:\n      enable: true\n"
      "      ranks: ${oc.select:defaults_block.ranks,[]}\n"
      "      all_ranks: ${oc.select:missing.key,false}\n"
      "      tool_config:\n        nsys:\n          discrete: ${...all_ranks}\n");
  EXPECT_EQ(p.tool, Tool::kNsys);
  EXPECT_EQ(p.save_path, "/env/path");
  const RolePlan* a = p.FindRole("actor");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(a->all_ranks);
  EXPECT_EQ(a->mode, CaptureMode::kEndToEnd);
}

TEST(LoaderTest, LegacyEmptyRanksMeanNoRankButGen3MeansRankZero) {
  Plan legacy = MustLoad("trainer: {profile_steps: [1]}\ncritic: {profiler: {ranks: []}}\n");
  EXPECT_FALSE(legacy.FindRole("critic")->enabled);
  Plan gen3 = MustLoad("global_profiler: {tool: npu, steps: [1]}\n"
                       "critic: {profiler: {enable: true, ranks: []}}\n");
  EXPECT_TRUE(gen3.FindRole("critic")->enabled);
  EXPECT_EQ(gen3.FindRole("critic")->ranks, (std::vector<int64_t>{0}));
}

TEST(LoaderTest, MindSpeedStageAllIsOneContinuousWindowOverTheHalfOpenRange) {
  Plan p = MustLoad("profiler_config:\n  integrated:\n    profile: true\n    stage: all\n"
                    "    profile_step_start: 2\n    profile_step_end: 5\n");
  EXPECT_EQ(p.dialect, Dialect::kMindSpeedRl);
  EXPECT_TRUE(p.steps.Contains(4));
  EXPECT_FALSE(p.steps.Contains(5));
  EXPECT_TRUE(p.continuous_steps);
  LoadOptions o;
  o.world_size = 2;
  auto sum = EnumerateCaptures(p, o);
  ASSERT_EQ(sum.rows.size(), 1u);
  EXPECT_EQ(sum.rows[0].scope, "steps2-4");
  EXPECT_EQ(sum.total_captures, 2);
  // Every worker role resolves to the integrated block.
  EXPECT_TRUE(ResolveForProcess(p, {"critic"}, 1).enabled);
}

TEST(LoaderTest, ContinuousStepsGroupConsecutiveRunsIntoWindows) {
  Plan p = MustLoad("global_profiler: {tool: torch, steps: [1, 2, 5], profile_continuous_steps: true}\n"
                    "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n");
  auto sum = EnumerateCaptures(p, {});
  std::vector<std::string> scopes;
  for (auto& r : sum.rows) scopes.push_back(r.steps + ":" + r.scope);
  EXPECT_EQ(scopes, (std::vector<std::string>{"1-2:steps1-2", "5:e2e"}));
}

TEST(LoaderTest, NativeScheduleAndTokenWindow) {
  Plan p = MustLoad("rlprof:\n  steps: {start: 2, end: 4}\n  roles:\n    rollout:\n"
                    "      ranks: [0, 1]\n      discrete: true\n"
                    "      schedule: {unit: decode, wait: 2, active: 4}\n");
  const RolePlan* r = p.FindRole("rollout");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->schedules.size(), 1u);
  EXPECT_EQ(r->schedules[0].unit, SubStepKind::kDecode);
  EXPECT_EQ(r->schedules[0].wait, 2);
  EXPECT_EQ(r->schedules[0].active, 4);
  EXPECT_EQ(r->schedules[0].stage, "");
  EXPECT_EQ(p.steps.Expand(10), (std::vector<int64_t>{2, 3}));
}

TEST(LoaderTest, PriorityPolicyWarnsAboutIgnoredRefBlock) {
  Plan p = MustLoad("global_profiler:\n  tool: torch\n  steps: [1]\n"
                    "  global_tool_config: {rlprof: {combine: priority}}\n"
                    "actor_rollout_ref:\n  ref: {profiler: {enable: true}}\n");
  EXPECT_EQ(p.combine, CombinePolicy::kPriority);
  EXPECT_FALSE(ResolveForProcess(p, {"actor", "rollout", "ref"}, 0).enabled);
  bool warned = false;
  for (auto& w : p.warnings) warned |= w.find("ref.profiler is ignored") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(LoaderTest, StepsBeyondTheJobAreWarnedAbout) {
  LoadOptions o;
  o.total_steps = 3;
  Plan p = MustLoad("global_profiler: {tool: torch, steps: [2, 7]}\n"
                    "actor_rollout_ref: {actor: {profiler: {enable: true}}}\n", {}, o);
  bool warned = false;
  for (auto& w : p.warnings) warned |= w.find("steps [7] never run") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(CapturesTest, SizeModelScalesWithContents) {
  Contents markers;
  Contents ops;
  ops.ops = true;
  EXPECT_GT(EventsPerSecond(Tool::kRlprof, ops, "level0"),
            10 * EventsPerSecond(Tool::kRlprof, markers, "level0"));
  EXPECT_GT(BytesPerEvent(markers, {ExportFormat::kText, ExportFormat::kDb}),
            BytesPerEvent(markers, {}));
  EXPECT_EQ(RankListToString({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

}  // namespace
}  // namespace rlprof::config

namespace rlprof::config {
namespace {

TEST(LoaderTest, RolloutOnlyRankOfTheFusedWorkerCapturesOnlyRolloutStages) {
  auto p = LoadPlan(std::string(RLPROF_SOURCE_DIR) + "/examples/configs/verl_agent_loop_rollout.yaml",
                    {}, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ProcessPlan r8 = ResolveForProcess(*p, {"actor", "rollout", "ref"}, 8);
  ASSERT_TRUE(r8.enabled);
  EXPECT_EQ(r8.stages, (std::vector<std::string>{"rollout_generate"}));
  ASSERT_EQ(r8.schedules.size(), 1u);
  EXPECT_TRUE(r8.schedules[0].token_window);
  ProcessPlan r0 = ResolveForProcess(*p, {"actor", "rollout", "ref"}, 0);
  // Actor and rollout select rank 0; the ref's stage follows the actor.
  EXPECT_EQ(r0.stages, (std::vector<std::string>{"actor_compute_log_prob", "actor_update",
                                                  "ref_compute_log_prob", "rollout_generate"}));
  EXPECT_FALSE(ResolveForProcess(*p, {"actor", "rollout", "ref"}, 3).enabled);
}

}  // namespace
}  // namespace rlprof::config
