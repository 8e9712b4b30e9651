#include "src/config/loader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

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

TEST(LoaderErrorsTest, AnInterpolationDefaultThatYamlDecodesToNonUtf8IsAnError) {
  // NUL bytes make yaml-cpp read a text as UTF-32: the default '.\0\0\0\0x' decoded into
  // code points that are not UTF-8, and `rlprof plan --json` aborted (hydra_overrides fuzzer).
  static constexpr char kValue[] = "${oc.select:missing.key,.\0\0\0\0.\0.x}";
  std::string value(kValue, sizeof kValue - 1);
  auto p = LoadPlanFromString("global_profiler: {tool: torch, steps: [1], save_path: ./out}\n",
                              "t.yaml", {"global_profiler.save_path=" + value}, {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("its default is not valid UTF-8 once parsed as YAML"),
            std::string::npos)
      << p.status().message();
}

TEST(LoaderTest, MindSpeedDpoCollectsOneStepMoreAndIgnoresStages) {
  const std::string cfg =
      "megatron_training: {stage: dpo}\n"
      "profiler_config:\n  integrated:\n    profile: true\n    profile_step_start: 2\n"
      "    profile_step_end: 4\n    stage: [actor_update]\n";
  Plan dpo = MustLoad(cfg);
  EXPECT_EQ(dpo.steps.start, 2);
  EXPECT_EQ(dpo.steps.end, 5);  // half-open: 2, 3, 4
  ASSERT_EQ(dpo.roles.size(), 1u);
  EXPECT_EQ(dpo.roles[0].mode, CaptureMode::kEndToEnd);
  EXPECT_TRUE(dpo.roles[0].stages.empty());
  Plan grpo = MustLoad("megatron_training: {stage: grpo}\n" + cfg.substr(cfg.find('\n') + 1));
  EXPECT_EQ(grpo.steps.end, 4);
  EXPECT_EQ(grpo.roles[0].mode, CaptureMode::kDiscrete);
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

// verl puts the critic in the actor/rollout/ref worker's process (one resource pool): its
// stages are captures of that worker, on the ranks its block selects; a critic whose block is
// off adds nothing (and does not make the fused worker's ranks "partial").
TEST(LoaderTest, AColocatedVerlCriticIsCapturedInTheFusedWorker) {
  const std::string head =
      "global_profiler: {tool: rlprof, steps: [2]}\n"
      "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0],"
      " tool_config: {rlprof: {discrete: true, stages: [actor_update]}}}}}\n";
  LoadOptions o;
  o.world_size = 2;
  Plan on = MustLoad(head + "critic: {profiler: {enable: true, ranks: [0, 1],"
                            " tool_config: {rlprof: {discrete: true, stages: [critic_update]}}}}\n");
  auto sum = EnumerateCaptures(on, o);
  std::vector<std::string> rows;
  for (const auto& r : sum.rows) {
    EXPECT_EQ(r.worker, "actor_rollout_ref");  // no worker "critic"
    rows.push_back(r.scope + "@" + r.ranks);
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"actor_update@0", "critic_update@0", "critic_update@1"}))
      << testing::PrintToString(rows);
  Plan off = MustLoad(head + "critic: {profiler: {enable: false}}\n");
  auto sum_off = EnumerateCaptures(off, o);
  ASSERT_EQ(sum_off.rows.size(), 1u);
  EXPECT_EQ(sum_off.rows[0].scope, "actor_update");
}

// verl >= 0.9 scores rewards in its reward loop's workers (reward.num_workers processes, no
// reward-model worker): with tool rlprof the reward block selects them by index, whatever the
// world size; a config without the reward loop keeps the reward-model worker.
TEST(LoaderTest, VerlsRewardLoopWorkersAreTheRewardRolesProcesses) {
  const std::string head =
      "global_profiler: {tool: rlprof, steps: [2]}\n"
      "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n";
  LoadOptions o;
  o.world_size = 2;
  auto rows = [&](const std::string& yaml) {
    std::vector<std::string> out;
    for (const auto& r : EnumerateCaptures(MustLoad(yaml), o).rows)
      if (r.worker != "actor_rollout_ref" && r.worker != "controller" && r.worker != "rollout replicas")
        out.push_back(r.worker + ":" + r.scope + "@" + r.ranks + "x" + std::to_string(r.captures));
    return out;
  };
  EXPECT_EQ(rows(head + "reward: {num_workers: 3}\nreward_model: {profiler: {enable: true, all_ranks: true}}\n"),
            (std::vector<std::string>{"reward loop:e2e@0-2x3"}));
  EXPECT_EQ(rows(head + "reward: {num_workers: 8}\nreward_model: {profiler: {enable: true, ranks: [1, 5]}}\n"),
            (std::vector<std::string>{"reward loop:e2e@1,5x2"}));
  EXPECT_TRUE(rows(head + "reward: {num_workers: 8}\nreward_model: {profiler: {enable: false}}\n").empty());
  EXPECT_TRUE(rows(head + "reward: {num_workers: 8}\n").empty());
  // Its ranks are worker indices: past the world size is fine, past num_workers an error.
  const std::string bad =
      MustFail(head + "reward: {num_workers: 8}\nreward_model: {profiler: {enable: true, ranks: [9]}}\n", {}, o);
  EXPECT_NE(bad.find("reward loop worker 9 does not exist: reward.num_workers is 8"), std::string::npos) << bad;
  // No reward loop in the config (verl < 0.9): the reward block is the reward-model worker's.
  EXPECT_EQ(rows(head + "reward_model: {profiler: {enable: true, ranks: [1]}}\n"),
            (std::vector<std::string>{"reward_model:e2e@1x1"}));
}

// verl >= 0.9 serves a reward model (reward.reward_model.enable) on rollout servers of its own,
// replicas of rollout tp x dp x pp GPUs in the trainer's pool or its own: with tool rlprof the
// reward block records their engines too (rank = the reward model's replica rank).
TEST(LoaderTest, VerlsServedRewardModelReplicasAreRewardProcessesToo) {
  const std::string head =
      "global_profiler: {tool: rlprof, steps: [2]}\n"
      "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n";
  const std::string all = "reward_model: {profiler: {enable: true, all_ranks: true}}\n";
  const std::string trainer = "trainer: {n_gpus_per_node: 8, nnodes: 1}\n";
  LoadOptions o;
  o.world_size = 8;
  auto rows = [&](const std::string& yaml, const LoadOptions& opt) {
    std::vector<std::string> out;
    for (const auto& r : EnumerateCaptures(MustLoad(yaml), opt).rows)
      if (r.worker.rfind("reward", 0) == 0)
        out.push_back(r.worker + ":" + r.scope + "@" + r.ranks + "x" + std::to_string(r.captures));
    return out;
  };
  // Colocated in the trainer's 8 GPUs, tp 2: 4 replicas (verl's default tp is 2).
  EXPECT_EQ(rows(head + all + trainer + "reward: {num_workers: 2, reward_model: {enable: true,"
                                        " rollout: {tensor_model_parallel_size: 2}}}\n", o),
            (std::vector<std::string>{"reward loop:e2e@0-1x2", "reward model servers:e2e@0-3x4"}));
  EXPECT_EQ(rows(head + all + trainer + "reward: {num_workers: 2, reward_model: {enable: true}}\n", o),
            (std::vector<std::string>{"reward loop:e2e@0-1x2", "reward model servers:e2e@0-3x4"}));
  // A pool of its own (enable_resource_pool): 4 x 2 GPUs, tp 1 x dp 2.
  EXPECT_EQ(rows(head + all + trainer + "reward: {num_workers: 1, reward_model: {enable: true,"
                 " enable_resource_pool: true, n_gpus_per_node: 4, nnodes: 2,"
                 " rollout: {tensor_model_parallel_size: 1, data_parallel_size: 2}}}\n", o),
            (std::vector<std::string>{"reward loop:e2e@0x1", "reward model servers:e2e@0-3x4"}));
  // Not served: no servers.
  EXPECT_EQ(rows(head + all + trainer + "reward: {num_workers: 2, reward_model: {enable: false}}\n", o),
            (std::vector<std::string>{"reward loop:e2e@0-1x2"}));
  // Without the trainer's GPU counts the world size decides.
  LoadOptions two;
  two.world_size = 2;
  EXPECT_EQ(rows(head + all + "reward: {num_workers: 1, reward_model: {enable: true,"
                              " rollout: {tensor_model_parallel_size: 1}}}\n", two),
            (std::vector<std::string>{"reward loop:e2e@0x1", "reward model servers:e2e@0-1x2"}));
  // Ranks index the larger of the two sets: rank 3 is a replica, 4 nothing.
  const std::string rm4 = "reward: {num_workers: 2, reward_model: {enable: true}}\n";
  EXPECT_EQ(rows(head + "reward_model: {profiler: {enable: true, ranks: [3]}}\n" + trainer + rm4, o),
            (std::vector<std::string>{"reward model servers:e2e@3x1"}));
  const std::string bad =
      MustFail(head + "reward_model: {profiler: {enable: true, ranks: [4]}}\n" + trainer + rm4, {}, o);
  EXPECT_NE(bad.find("reward model replica 4 does not exist: the reward model's replica count is 4"),
            std::string::npos) << bad;
}

// verl's single controller (RayPPOTrainer.fit in its TaskRunner) records each profiled step's
// stages with tool rlprof: one e2e capture a step window on rank 0 whatever the world size, in
// discrete runs too; continuous steps are one window; other tools have no controller lane.
TEST(LoaderTest, VerlsControllerHasOneLaneOfStepWindowsWithToolRlprof) {
  const std::string roles =
      "actor_rollout_ref: {actor: {profiler: {enable: true, all_ranks: true,"
      " tool_config: {rlprof: {discrete: true}}}}}\ntrainer: {total_training_steps: 4}\n";
  LoadOptions o;
  o.world_size = 8;
  auto controller_rows = [&](const std::string& yaml) {
    std::vector<std::string> rows;
    for (const auto& r : EnumerateCaptures(MustLoad(yaml), o).rows)
      if (r.worker == "controller")
        rows.push_back(r.steps + ":" + r.scope + "@" + r.ranks + "x" + std::to_string(r.captures));
    return rows;
  };
  EXPECT_EQ(controller_rows("global_profiler: {tool: rlprof, steps: [2, 4]}\n" + roles),
            (std::vector<std::string>{"2:e2e@0x1", "4:e2e@0x1"}));
  EXPECT_EQ(controller_rows("global_profiler: {tool: rlprof, steps: [2, 3],"
                            " profile_continuous_steps: true}\n" + roles),
            (std::vector<std::string>{"2-3:steps2-3@0x1"}));
  EXPECT_TRUE(controller_rows("global_profiler: {tool: torch, steps: [2]}\n" + roles).empty());
  EXPECT_TRUE(controller_rows("global_profiler: {tool: rlprof, steps: null}\n" + roles).empty());
  // A verl-format profiler config without verl's trainer block drives another loop: no controller.
  const std::string no_trainer = roles.substr(0, roles.find("trainer:"));
  EXPECT_TRUE(controller_rows("global_profiler: {tool: rlprof, steps: [2]}\n" + no_trainer).empty());
  Plan p = MustLoad("global_profiler: {tool: rlprof, steps: [2]}\n" + roles);
  ProcessPlan c = ResolveForProcess(p, {"controller"}, 0);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.mode, CaptureMode::kEndToEnd);
  EXPECT_EQ(c.contents.Names(), std::vector<std::string>{"cpu"});
  EXPECT_FALSE(ResolveForProcess(p, {"actor", "rollout", "ref"}, 0).roles.empty());
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

TEST(LoaderTest, OpsSamplingIsAShareOfOperatorCallsPerRoleTheDenserWinsInOneProcess) {
  Plan p = MustLoad("rlprof:\n  steps: [1]\n  roles:\n"
                    "    actor: {ranks: [0], contents: [cpu, ops], ops_sampling: 0.1}\n"
                    "    ref: {ranks: [0], contents: [cpu, ops], ops_sampling: 0.5}\n"
                    "    critic: {ranks: [0], contents: [cpu, ops]}\n"
                    "    reward: {ranks: [0], contents: [cpu]}\n"
                    "    rollout: {ranks: [0], contents: [cpu, stack], ops_sampling: 0.2}\n");
  ASSERT_NE(p.FindRole("actor"), nullptr);
  ASSERT_NE(p.FindRole("critic"), nullptr);
  EXPECT_DOUBLE_EQ(p.FindRole("actor")->ops_sampling, 0.1);
  EXPECT_DOUBLE_EQ(p.FindRole("critic")->ops_sampling, 1.0);
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"actor"}, 0).ops_sampling, 0.1);
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"actor", "ref"}, 0).ops_sampling, 0.5);
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"actor", "critic"}, 0).ops_sampling, 1.0);
  // A block without operators says nothing about their share, before or after.
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"reward", "actor"}, 0).ops_sampling, 0.1);
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"actor", "reward"}, 0).ops_sampling, 0.1);
  // stack records operators too (it implies them).
  EXPECT_DOUBLE_EQ(ResolveForProcess(p, {"actor", "rollout"}, 0).ops_sampling, 0.2);
  // verl's tool_config.rlprof block, also from the command line.
  const std::string verl =
      "global_profiler: {tool: rlprof, steps: [1]}\n"
      "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0], tool_config: "
      "{rlprof: {contents: [cpu, ops]}}}}}\n";
  Plan v = MustLoad(verl, {"+actor_rollout_ref.actor.profiler.tool_config.rlprof.ops_sampling=0.05"});
  ASSERT_NE(v.FindRole("actor"), nullptr);
  EXPECT_DOUBLE_EQ(v.FindRole("actor")->ops_sampling, 0.05);
  // The rollout block inherits it with the contents (verl's role YAML interpolates the actor's),
  // so verl's fused worker (actor, rollout, ref) samples as its actor block says.
  ASSERT_NE(v.FindRole("rollout"), nullptr);
  EXPECT_DOUBLE_EQ(v.FindRole("rollout")->ops_sampling, 0.05);
  EXPECT_DOUBLE_EQ(ResolveForProcess(v, {"actor", "rollout", "ref"}, 0).ops_sampling, 0.05);
  // Out of (0, 1]: an error naming file, line, key, value and what is allowed.
  for (const char* bad : {"0", "1.5", "-0.1", "one", "[0.1]"}) {
    std::string m = MustFail(std::string("rlprof:\n  steps: [1]\n  roles:\n    actor:\n"
                                         "      ranks: [0]\n      ops_sampling: ") + bad + "\n");
    EXPECT_NE(m.find("t.yaml:6"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("ops_sampling"), std::string::npos) << m;
  }
  std::string m = MustFail("rlprof:\n  steps: [1]\n  roles:\n    actor: {ranks: [0], ops_sampling: 2}\n");
  EXPECT_NE(m.find("more than 0 and at most 1"), std::string::npos) << m;
  EXPECT_NE(m.find("2"), std::string::npos) << m;
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
  // A tenth of the operator calls: about a tenth of their events.
  EXPECT_LT(EventsPerSecond(Tool::kRlprof, ops, "level0", 0.1),
            0.2 * EventsPerSecond(Tool::kRlprof, ops, "level0"));
  EXPECT_GT(BytesPerEvent(markers, {ExportFormat::kChromeJson, ExportFormat::kSqlite}),
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

// Issue 10: a bad config gets an error naming file, line, key, value and what is allowed.
namespace rlprof::config {
namespace {

bool Has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

TEST(LoaderErrorsTest, KeysGivenTwiceAreErrorsNamingBothLines) {
  std::string msg = MustFail(
      "global_profiler:\n  tool: npu\n  steps: [1]\n  tool: torch\n"
      "actor_rollout_ref: {actor: {profiler: {enable: true}}}\n"
      "data: {a: 1}\ndata: {a: 2}\n");
  EXPECT_NE(msg.find("2 errors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("t.yaml:4: key 'global_profiler.tool' is given twice (first at line 2)"),
            std::string::npos) << msg;
  // Outside the profiler blocks too: OmegaConf rejects the whole file.
  EXPECT_NE(msg.find("t.yaml:7: key 'data' is given twice (first at line 6)"), std::string::npos)
      << msg;
}

// Issue 35: list elements verl would compare to ints and match nothing with were accepted
// ([2, null] profiled nothing with a generic warning, [null] became rank 0, "1" became 1), and
// a NUL in a path was written through. Each is an error naming file, line and key.
TEST(LoaderErrorsTest, NullsQuotedNumbersAndNulBytesAreErrorsNamingTheKey) {
  const std::string tail = "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n";
  std::string m = MustFail("global_profiler: {tool: torch, steps: [2, null]}\n" + tail);
  EXPECT_NE(m.find("t.yaml:1: "), std::string::npos) << m;
  EXPECT_NE(m.find("global_profiler.steps[1]"), std::string::npos) << m;
  EXPECT_NE(m.find("null in a list of steps"), std::string::npos) << m;
  m = MustFail("global_profiler: {tool: torch, steps: [1]}\n"
               "actor_rollout_ref:\n  actor:\n    profiler: {enable: true, ranks: [null]}\n");
  EXPECT_NE(m.find("t.yaml:4: "), std::string::npos) << m;
  EXPECT_NE(m.find("ranks[0]"), std::string::npos) << m;
  EXPECT_NE(m.find("null in a list of ranks"), std::string::npos) << m;
  m = MustFail("global_profiler: {tool: torch, steps: [1]}\n"
               "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0, \"1\"]}}}\n");
  EXPECT_NE(m.find("'1' is a quoted string, not a number"), std::string::npos) << m;
  m = MustFail("global_profiler: {tool: torch, steps: ['2']}\n" + tail);
  EXPECT_NE(m.find("'2' is a quoted string, not a number"), std::string::npos) << m;
  m = MustFail("global_profiler: {tool: torch, steps: [1], save_path: \"/tmp/a\\0b\"}\n" + tail);
  EXPECT_NE(m.find("global_profiler.save_path"), std::string::npos) << m;
  EXPECT_NE(m.find("NUL byte"), std::string::npos) << m;
  // The same through verl's command line (Hydra overrides).
  m = MustFail("global_profiler: {tool: torch, steps: [1]}\n" + tail, {"global_profiler.steps=[2,null]"});
  EXPECT_NE(m.find("null in a list of steps"), std::string::npos) << m;
  m = MustFail("global_profiler: {tool: torch, steps: [1]}\n" + tail, {"global_profiler.steps=[2,'3']"});
  EXPECT_NE(m.find("quoted string"), std::string::npos) << m;
  // Plain numbers still load.
  Plan ok = MustLoad("global_profiler: {tool: torch, steps: [2, 3]}\n" + tail);
  EXPECT_EQ(ok.steps.list, (std::vector<int64_t>{2, 3}));
}

TEST(LoaderErrorsTest, KeysGivenTwiceAreReportedWithAnyOtherFatalError) {
  std::string msg = MustFail("a: 1\na: 2\n");
  EXPECT_NE(msg.find("t.yaml:2: key 'a' is given twice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no profiler configuration found"), std::string::npos) << msg;
}

TEST(LoaderErrorsTest, RepeatedOverridesApplyInOrderWithAWarning) {
  const char* yaml = "global_profiler: {tool: torch, steps: [1]}\n"
                     "actor_rollout_ref: {actor: {profiler: {enable: true}}}\n";
  Plan p = MustLoad(yaml, {"global_profiler.steps=[2]", "global_profiler.steps=[3]"});
  EXPECT_EQ(p.steps.list, (std::vector<int64_t>{3}));
  EXPECT_TRUE(Has(p.warnings, "override 'global_profiler.steps=[3]' sets 'global_profiler.steps' "
                              "again after override 'global_profiler.steps=[2]'"));
  // A mapping value repeating a key is rejected like a file doing so.
  EXPECT_EQ(MustFail(yaml, {"++global_profiler.global_tool_config={rlprof: {combine: union, "
                            "combine: priority}}"}),
            "override '++global_profiler.global_tool_config={rlprof: {combine: union, combine: "
            "priority}}': key 'global_profiler.global_tool_config.rlprof.combine' is given twice "
            "in the value");
  // Deleting and adding again is a deliberate sequence, not a repetition.
  Plan q = MustLoad(yaml, {"~global_profiler.steps", "+global_profiler.steps=[4]"});
  EXPECT_FALSE(Has(q.warnings, "again after"));
}

TEST(LoaderErrorsTest, SyntaxErrorsNameLineColumnAndEnclosingKeyPath) {
  std::string msg = MustFail("global_profiler:\n  tool: npu\n  global_tool_config:\n"
                             "    nsys:\n      discrete: true\n     worker_nsight_options: {}\n");
  EXPECT_EQ(msg.rfind("t.yaml:6:", 0), 0u) << msg;
  // Less indented than `discrete`, more than `nsys`: the error is in nsys's mapping.
  EXPECT_NE(msg.find("syntax error in 'global_profiler.global_tool_config.nsys': end of map not "
                     "found"), std::string::npos) << msg;
  std::string top = MustFail("a: 1\n- b\n");
  EXPECT_NE(top.find("t.yaml:2:1: syntax error at the top level"), std::string::npos) << top;
}

TEST(LoaderErrorsTest, UndefinedAliasNamesTheAliasAtItsUse) {
  std::string msg = MustFail("global_profiler:\n  tool: npu\n  steps: *my_steps\n");
  EXPECT_EQ(msg, "t.yaml:3:10: undefined alias '*my_steps' in 'global_profiler.steps': no anchor "
                 "'&my_steps' is defined in the file");
  std::string later = MustFail("a: *x\nb: &x 1\n");
  EXPECT_NE(later.find("t.yaml:1:4: undefined alias '*x' in 'a': its anchor '&x' comes later, "
                       "at line 2"), std::string::npos) << later;
}

TEST(LoaderErrorsTest, BadValuesThroughAnAliasAreReportedAtItsUse) {
  std::string msg = MustFail("prof: &p\n  enable: maybe\n  ranks: [0, -1]\n"
                             "global_profiler: {tool: npu, steps: [1]}\n"
                             "actor_rollout_ref:\n  actor:\n    profiler: *p\n");
  EXPECT_NE(msg.find("t.yaml:7: actor_rollout_ref.actor.profiler.enable: expected true or false, "
                     "got 'maybe' (through alias '*p'; the value is written at line 2)"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("t.yaml:7: actor_rollout_ref.actor.profiler.ranks[1]: '-1' is out of range; "
                     "must be >= 0 (through alias '*p'; the value is written at line 3)"),
            std::string::npos) << msg;
  // A scalar alias too; a value written in place is reported where it is.
  std::string flag = MustFail("f: &f maybe\nglobal_profiler: {tool: npu, steps: [1]}\n"
                              "actor_rollout_ref: {actor: {profiler: {enable: *f}}}\n");
  EXPECT_NE(flag.find("t.yaml:3: actor_rollout_ref.actor.profiler.enable: expected true or false, "
                      "got 'maybe' (through alias '*f'; the value is written at line 1)"),
            std::string::npos) << flag;
  std::string plain = MustFail("global_profiler: {tool: npu, steps: [1]}\n"
                               "actor_rollout_ref: {actor: {profiler: {enable: &g maybe}}}\n");
  EXPECT_EQ(plain.find("through alias"), std::string::npos) << plain;
}

TEST(LoaderErrorsTest, MisspeltVerlRoleBlocksAreErrorsWithASuggestion) {
  std::string fused = MustFail("global_profiler: {tool: npu, steps: [1]}\n"
                               "actor_rollout_ref:\n  actr:\n    profiler: {enable: true}\n");
  EXPECT_NE(fused.find("t.yaml:3: actor_rollout_ref.actr: unknown role 'actr': its profiler block "
                       "is never read; did you mean 'actor'?"), std::string::npos) << fused;
  std::string top = MustFail("global_profiler: {tool: npu, steps: [1]}\n"
                             "critc: {profiler: {enable: true}}\n");
  EXPECT_NE(top.find("did you mean 'critic'?"), std::string::npos) << top;
  std::string parent = MustFail("global_profiler: {tool: npu, steps: [1]}\n"
                                "actor_rolout_ref: {actor: {profiler: {enable: true}}}\n");
  EXPECT_NE(parent.find("t.yaml:2: actor_rolout_ref: unknown key: its role blocks are never read; "
                        "did you mean 'actor_rollout_ref'?"), std::string::npos) << parent;
  std::string key = MustFail("global_profiler: {tool: npu, steps: [1]}\n"
                             "critic: {profilr: {enable: true}}\n");
  EXPECT_NE(key.find("critic.profilr: unknown key; did you mean 'profiler'?"), std::string::npos)
      << key;
  std::string legacy = MustFail("trainer: {profile_steps: [1]}\n"
                                "actor_rollout_ref: {rollot: {profiler: {ranks: [0]}}}\n");
  EXPECT_NE(legacy.find("did you mean 'rollout'?"), std::string::npos) << legacy;
}

TEST(LoaderErrorsTest, OtherBlocksWithAProfilerAreIgnoredWithAWarning) {
  Plan p = MustLoad("global_profiler: {tool: npu, steps: [1]}\n"
                    "my_teacher_model: {profiler: {enable: true}}\n"
                    "actor_rollout_ref: {actor: {profiler: {enable: true}}}\n");
  EXPECT_TRUE(Has(p.warnings, "my_teacher_model.profiler is not a role block verl reads"));
}

TEST(LoaderErrorsTest, NativeRoleNamesNearAConventionalOneAreWarnedAbout) {
  Plan p = MustLoad("rlprof:\n  steps: [1]\n  roles:\n    actr: {ranks: [0]}\n"
                    "    my_judge: {ranks: [1]}\n");
  EXPECT_TRUE(Has(p.warnings, "t.yaml:4: rlprof.roles.actr: role 'actr' is not a conventional role "
                              "name; did you mean 'actor'?"));
  EXPECT_FALSE(Has(p.warnings, "my_judge"));  // any name is a role in the native dialect
  EXPECT_NE(p.FindRole("actr"), nullptr);
}

TEST(LoaderErrorsTest, MisspeltProfilerBlockNamesAreErrorsNotProfilingOff) {
  std::string gp = MustFail("global_profilr: {tool: npu}\nactor_rollout_ref: {actor: {}}\n");
  EXPECT_EQ(gp, "t.yaml:1: unknown top-level key 'global_profilr'; did you mean "
                "'global_profiler'? (no profiler block found otherwise)");
  std::string steps = MustFail("trainer: {profile_step: [1]}\nactor_rollout_ref: {actor: {}}\n");
  EXPECT_NE(steps.find("did you mean 'trainer.profile_steps'?"), std::string::npos) << steps;
  EXPECT_NE(MustFail("model: {name: x}\n").find("no profiler configuration found"),
            std::string::npos);
}

TEST(LoaderErrorsTest, TrainingConfigsWithoutAProfilerBlockLoadWithProfilingOff) {
  Plan verl =
      MustLoad("trainer: {total_epochs: 1}\nactor_rollout_ref: {actor: {strategy: fsdp}}\n");
  EXPECT_EQ(verl.dialect, Dialect::kVerlGen3);
  EXPECT_FALSE(verl.profiling_enabled());
  ASSERT_FALSE(verl.notes.empty());
  EXPECT_NE(verl.notes[0].find("no global_profiler block: profiling is off"), std::string::npos);
  EXPECT_FALSE(Has(verl.notes, "are null"));  // one note, not two
  Plan ms = MustLoad("actor_config: {model: x}\nrl_config: {adv_estimator: grpo}\n");
  EXPECT_EQ(ms.dialect, Dialect::kMindSpeedRl);
  EXPECT_FALSE(ms.profiling_enabled());
  // A misspelt role block is still caught when profiling is off.
  EXPECT_NE(MustFail("actor_rollout_ref: {actr: {profiler: {enable: true}}}\n").find("did you mean "
                     "'actor'?"), std::string::npos);
}

TEST(LoaderErrorsTest, ShippedMindSpeedRlConfigsLoadWithProfilingOff) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(RLPROF_SOURCE_DIR) +
                                              "/test/data/fixtures/configs/mindspeed-rl")) {
    SCOPED_TRACE(e.path().string());
    auto p = LoadPlan(e.path().string(), {}, {});
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->dialect, Dialect::kMindSpeedRl);
    EXPECT_FALSE(p->profiling_enabled());
    EXPECT_TRUE(Has(p->notes, "no profiler_config block: profiling is off"));
    EXPECT_TRUE(EnumerateCaptures(*p, {}).rows.empty());
    ++n;
  }
  EXPECT_EQ(n, 17);
}

TEST(LoaderErrorsTest, GeneratedVerlConfigsLoadAndTheActorBlockDecidesForTheRef) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(RLPROF_SOURCE_DIR) +
                                              "/test/data/fixtures/configs/verl")) {
    SCOPED_TRACE(e.path().string());
    auto off = LoadPlan(e.path().string(), {}, {});
    ASSERT_TRUE(off.ok()) << off.status().message();
    EXPECT_FALSE(off->profiling_enabled());
    ASSERT_EQ(off->notes.size(), 1u);  // actor and ref both off: nothing differs
    EXPECT_NE(off->notes[0].find("profiling is off: global_profiler.tool and global_profiler.steps "
                                 "are null"), std::string::npos);
    auto on = LoadPlan(e.path().string(),
                       {"global_profiler.tool=torch", "global_profiler.steps=[2]",
                        "actor_rollout_ref.actor.profiler.enable=true",
                        "actor_rollout_ref.ref.profiler.enable=true",
                        "actor_rollout_ref.ref.profiler.tool_config.torch.discrete=true"},
                       {});
    ASSERT_TRUE(on.ok()) << on.status().message();
    EXPECT_EQ(on->FindRole("ref")->mode, CaptureMode::kEndToEnd);
    EXPECT_TRUE(Has(on->notes, "discrete: true (actor: false)"));
    ++n;
  }
  EXPECT_EQ(n, 4);
}

TEST(LoaderErrorsTest, RefBlockFollowsTheActorUnlessCombineIsSet) {
  const std::string yaml =
      "global_profiler:\n  tool: npu\n  steps: [1]\n"
      "actor_rollout_ref:\n"
      "  actor: {profiler: {enable: true, ranks: [0], tool_config: {npu: {discrete: false}}}}\n"
      "  ref: {profiler: {enable: true, ranks: [1], tool_config: {npu: {discrete: true}}}}\n";
  Plan p = MustLoad(yaml);
  const RolePlan* ref = p.FindRole("ref");
  EXPECT_EQ(ref->mode, CaptureMode::kEndToEnd);
  EXPECT_EQ(ref->ranks, (std::vector<int64_t>{0}));
  EXPECT_EQ(ref->block_path, "actor_rollout_ref.ref.profiler");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("ranks: [1] (actor: [0]); discrete: true (actor: false)"),
            std::string::npos) << p.notes[0];
  EXPECT_FALSE(ResolveForProcess(p, {"actor", "rollout", "ref"}, 1).enabled);
  // A ref block alone does nothing in verl's fused worker.
  Plan alone = MustLoad("global_profiler: {tool: npu, steps: [1]}\n"
                        "actor_rollout_ref: {ref: {profiler: {enable: true}}}\n");
  EXPECT_FALSE(alone.FindRole("ref")->enabled);
  EXPECT_TRUE(Has(alone.notes, "enable: true (actor: false)"));
  // The ref block's own stage allow-list (rlprof's key; verl captures every annotated stage of
  // the process) is kept and united with the actor's.
  Plan stages = MustLoad(
      "global_profiler: {tool: rlprof, steps: [1]}\nactor_rollout_ref:\n"
      "  actor: {profiler: {enable: true, ranks: [0], tool_config: {rlprof: {discrete: true, "
      "stages: [actor_update]}}}}\n"
      "  ref: {profiler: {enable: true, ranks: [0, 1], tool_config: {rlprof: {discrete: true, "
      "stages: [ref_compute_log_prob]}}}}\n");
  EXPECT_EQ(stages.FindRole("ref")->stages, (std::vector<std::string>{"ref_compute_log_prob"}));
  EXPECT_EQ(stages.FindRole("ref")->ranks, (std::vector<int64_t>{0}));
  EXPECT_EQ(ResolveForProcess(stages, {"actor", "rollout", "ref"}, 0).stages,
            (std::vector<std::string>{"actor_update", "ref_compute_log_prob"}));
  EXPECT_FALSE(ResolveForProcess(stages, {"actor", "rollout", "ref"}, 1).enabled);
  ASSERT_EQ(stages.notes.size(), 1u);
  EXPECT_NE(stages.notes[0].find("(ranks: [0, 1] (actor: [0]))"), std::string::npos)
      << stages.notes[0];
  // verl Gen 1 united the hosted blocks itself: a disagreement is a note, discrete wins.
  Plan gen1 = MustLoad("trainer: {profile_steps: [1]}\nactor_rollout_ref:\n"
                       "  actor: {profiler: {discrete: true, ranks: [0]}}\n"
                       "  ref: {profiler: {discrete: false, ranks: [0]}}\n");
  EXPECT_TRUE(Has(gen1.notes, "verl Gen 1 unites the blocks it hosts"));
  EXPECT_EQ(ResolveForProcess(gen1, {"actor", "rollout", "ref"}, 0).mode, CaptureMode::kDiscrete);
  // An explicit union keeps every block's say, and its disagreement check.
  std::string msg =
      MustFail(yaml, {"+global_profiler.global_tool_config={rlprof: {combine: union}}"});
  EXPECT_NE(msg.find("colocated roles disagree on discrete"), std::string::npos) << msg;
}

}  // namespace
}  // namespace rlprof::config
