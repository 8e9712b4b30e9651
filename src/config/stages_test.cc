#include "src/config/stages.h"

#include <gtest/gtest.h>

#include "src/config/loader.h"

namespace rlprof::config {
namespace {

TEST(StageVocabularyTest, MindSpeedAndVerlNamesOfOneStageAreTheSameStage) {
  EXPECT_EQ(CanonicalStage("actor_generate"), "rollout_generate");
  EXPECT_EQ(CanonicalStage("reference_compute_log_prob"), "ref_compute_log_prob");
  EXPECT_EQ(CanonicalStage("critic_compute_values"), "compute_values");
  EXPECT_EQ(CanonicalStage("actor_update"), "actor_update");
  EXPECT_EQ(CanonicalStage("my_stage"), "my_stage");
  EXPECT_TRUE(SameStage("actor_generate", "rollout_generate"));
  EXPECT_FALSE(SameStage("actor_compute_log_prob", "ref_compute_log_prob"));
  EXPECT_EQ(StageRole("reference_compute_log_prob"), "ref");
  EXPECT_EQ(StageRole("my_stage"), "");
}

// verl's trainer timers (timing_s/<name>) name the same stages.
TEST(StageVocabularyTest, VerlTrainerTimerNamesAreTheStages) {
  const std::pair<const char*, const char*> names[] = {
      {"gen", "rollout_generate"},          {"old_log_prob", "actor_compute_log_prob"},
      {"ref", "ref_compute_log_prob"},      {"values", "compute_values"},
      {"update_actor", "actor_update"},     {"update_critic", "critic_update"},
      {"update_weights", "weight_sync"},    {"reward", "compute_rm_score"}};
  for (const auto& [timer, stage] : names) {
    EXPECT_EQ(CanonicalStage(timer), stage) << timer;
    EXPECT_EQ(StageRole(timer), StageRole(stage)) << timer;
  }
  // The controller's own computation: a stage of its lane (no worker records it).
  EXPECT_EQ(CanonicalStage("adv"), "compute_advantage");
  EXPECT_EQ(StageRole("adv"), "controller");
}

TEST(StageVocabularyTest, EveryVocabularyWordIsInTheTable) {
  for (const std::string& name : {"rollout_generate", "actor_compute_log_prob",
                                  "ref_compute_log_prob", "actor_update", "compute_values",
                                  "critic_update", "compute_rm_score", "train_batch",
                                  "forward_backward", "actor_generate",
                                  "reference_compute_log_prob", "critic_compute_values",
                                  "actor_image_embeds", "weight_sync"})
    EXPECT_NE(FindStage(name), nullptr) << name;
}

TEST(StageVocabularyTest, UnitsFollowTheKnownHooks) {
  EXPECT_TRUE(StageRunsUnit("actor_generate", SubStepKind::kDecode));
  EXPECT_FALSE(StageRunsUnit("actor_update", SubStepKind::kDecode));
  EXPECT_TRUE(StageRunsUnit("actor_update", SubStepKind::kMicroBatch));
  EXPECT_TRUE(StageRunsUnit("actor_update", SubStepKind::kMiniBatch));
  EXPECT_FALSE(StageRunsUnit("ref_compute_log_prob", SubStepKind::kMiniBatch));
  EXPECT_TRUE(StageRunsUnit("custom", SubStepKind::kMiniBatch));
  EXPECT_FALSE(StageRunsUnit("custom", SubStepKind::kStep));
  EXPECT_EQ(StageUnitsText("actor_update"), "mini_batch, micro_batch");
}

TEST(StageVocabularyTest, AllowListsMatchAcrossDialects) {
  RolePlan r;
  r.stages = {"actor_generate", "reference_compute_log_prob"};
  EXPECT_TRUE(r.StageSelected("rollout_generate"));
  EXPECT_TRUE(r.StageSelected("ref_compute_log_prob"));
  EXPECT_FALSE(r.StageSelected("actor_update"));
}

TEST(StageVocabularyTest, MindSpeedStageListIsPlannedUnderCanonicalNamesWithANote) {
  auto plan = LoadPlanFromString(R"(
profiler_config:
  integrated:
    profile: true
    stage: [actor_generate, reference_compute_log_prob]
    profile_step_start: 1
    profile_step_end: 3
)", "ms.yaml", {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->roles.size(), 1u);
  EXPECT_EQ(plan->roles[0].stages,
            (std::vector<std::string>{"rollout_generate", "ref_compute_log_prob"}));
  ASSERT_EQ(plan->notes.size(), 2u);
  EXPECT_NE(plan->notes[0].find("actor_generate is rlprof's rollout_generate"), std::string::npos);
  ProcessPlan p = ResolveForProcess(*plan, {"actor"}, 0);
  EXPECT_TRUE(p.StageSelected("rollout_generate"));
  EXPECT_TRUE(p.StageSelected("actor_generate"));
}

TEST(StageVocabularyTest, StageNoAnnotationOfTheFrameworkEmitsIsAWarning) {
  auto plan = LoadPlanFromString(R"(
global_profiler: {tool: rlprof, steps: [1], global_tool_config: {rlprof: {custom_stages: [my_stage]}}}
actor_rollout_ref:
  actor:
    profiler:
      enable: true
      tool_config: {rlprof: {discrete: true, stages: [actor_update, actor_image_embeds, my_stage]}}
)", "v.yaml", {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::string all;
  for (const auto& w : plan->warnings) all += w + "\n";
  EXPECT_NE(all.find("stage actor_image_embeds is not annotated by verl's own code (only by "
                     "MindSpeed-RL)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("stage my_stage (custom_stages) is not emitted by any known annotation"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("actor_update"), std::string::npos) << all;
}

}  // namespace
}  // namespace rlprof::config
