// Per-stage sampling: several schedules in one process, each on its own stages, found by the
// stage (aliases included) and not by a declaration at the annotation; what each scheduled
// capture reports it holds.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/runtime/capture_controller.h"
#include "src/runtime/capture_controller_test_util.h"

namespace rlprof::runtime {
namespace {

using config::SubStepKind;
using testing::Discrete;
using testing::Harness;
using testing::MakePlan;
using testing::MakeSchedule;
using testing::StepList;
using testing::Summaries;
using testing::WithSchedule;
using testing::WithTokens;

config::Schedule ForStage(config::Schedule s, std::string stage) {
  s.stage = std::move(stage);
  return s;
}

std::vector<std::string> Sampled(const Harness& h) {
  std::vector<std::string> out;
  for (const auto& c : h.captures()) out.push_back(c.scope + ": " + c.sampled);
  return out;
}

// The seeds' recipe in verl's fused worker: decode window in the rollout, first micro-batch
// of each log-prob stage, first mini-batch of the update. Nothing is declared at the stages.
config::ProcessPlan Recipe() {
  config::ProcessPlan p = Discrete();
  p = WithTokens(p, 30, 70);
  p = WithSchedule(p, ForStage(MakeSchedule(0, 0, 0, 1, 1, SubStepKind::kMicroBatch),
                               "actor_compute_log_prob"));
  p = WithSchedule(p, ForStage(MakeSchedule(0, 0, 0, 1, 1, SubStepKind::kMiniBatch), "actor_update"));
  p = WithSchedule(p, MakeSchedule(0, 0, 0, 1, 1, SubStepKind::kMicroBatch), "ref");
  return p;
}

void RunStep(Harness& h, int64_t step) {
  h.StepBegin(step);
  h.Stage("weight_sync", "rollout");
  h.StageBegin("rollout_generate", "rollout").Decodes(128).StageEnd();
  h.StageBegin("ref_compute_log_prob", "ref").SubStep(SubStepKind::kMicroBatch, 8).StageEnd();
  h.StageBegin("actor_compute_log_prob", "actor").SubStep(SubStepKind::kMicroBatch, 8).StageEnd();
  h.StageBegin("actor_update", "actor");
  for (int m = 0; m < 4; ++m) h.SubStep(SubStepKind::kMicroBatch, 2).MiniBatches(1);
  h.StageEnd().StepEnd();
}

TEST(CaptureControllerSamplingTest, RecipeSchedulesAllApplyInOneProcessWithoutDeclarations) {
  Harness h(MakePlan(StepList({2})), Recipe());
  RunStep(h, 1);
  RunStep(h, 2);
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{
                            "weight_sync: ",
                            "rollout_generate: decode [30, 70)",
                            "ref_compute_log_prob: micro_batch [0, 1)",
                            "actor_compute_log_prob: micro_batch [0, 1)",
                            "actor_update: mini_batch [0, 1)",
                        }));
  for (size_t i = 1; i < h.captures().size(); ++i) EXPECT_EQ(h.captures()[i].reason, "schedule");
}

TEST(CaptureControllerSamplingTest, ActorMicroBatchScheduleNoLongerSwitchesOffTheRolloutDecodeWindow) {
  // The issue: adding this actor schedule used to win over the rollout's window ("first
  // schedule wins") and the update was captured whole because it declared no unit.
  config::ProcessPlan p = WithSchedule(Discrete({"rollout_generate", "actor_update"}),
                                       MakeSchedule(1, 1, 1, 2, 2, SubStepKind::kMicroBatch));
  p = WithTokens(p, 2, 5);
  Harness h(MakePlan(StepList({1})), p);
  h.StepBegin(1);
  h.StageBegin("rollout_generate", "rollout").Decodes(6).StageEnd();
  h.StageBegin("actor_update", "actor").SubStep(SubStepKind::kMicroBatch, 8).StageEnd();
  h.StepEnd();
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{
                            "rollout_generate: decode [2, 5)",
                            "actor_update.part1: micro_batch [3, 5)",
                            "actor_update.part2: micro_batch [7, 8) cut",
                        }));
  EXPECT_EQ(h.captures()[2].reason, "stage_end");
}

TEST(CaptureControllerSamplingTest, StageScheduleWinsOverTheRoleWideOneAndCountsOnlyItsUnit) {
  config::ProcessPlan p = WithSchedule(Discrete(), MakeSchedule(0, 0, 0, 2, 1, SubStepKind::kMicroBatch));
  p = WithSchedule(p, ForStage(MakeSchedule(1, 0, 0, 1, 1, SubStepKind::kMiniBatch), "actor_update"));
  Harness h(MakePlan(StepList({1})), p);
  h.StepBegin(1);
  h.StageBegin("actor_compute_log_prob").SubStep(SubStepKind::kMicroBatch, 4).StageEnd();
  h.StageBegin("actor_update");
  for (int m = 0; m < 3; ++m) h.SubStep(SubStepKind::kMicroBatch, 2).MiniBatches(1);
  h.StageEnd().StepEnd();
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{
                            "actor_compute_log_prob: micro_batch [0, 2)",
                            "actor_update: mini_batch [1, 2)",
                        }));
}

TEST(CaptureControllerSamplingTest, StageNamesCrossDialects) {
  // MindSpeed-RL names in the config, verl names in the code (and the other way round).
  config::ProcessPlan p = Discrete({"actor_generate", "reference_compute_log_prob"});
  p = WithSchedule(p, ForStage(MakeSchedule(0, 0, 0, 1, 1, SubStepKind::kMicroBatch),
                               "reference_compute_log_prob"), "*");
  Harness h(MakePlan(StepList({1, 2})), p);
  for (int64_t step : {1, 2}) {
    h.StepBegin(step);
    h.StageBegin("rollout_generate", "rollout").Decodes(3).StageEnd();
    h.StageBegin("ref_compute_log_prob", "ref").SubStep(SubStepKind::kMicroBatch, 4).StageEnd();
    h.Stage("actor_update");
    h.StepEnd();
  }
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] stage_end", "ref_compute_log_prob [1] schedule",
                                      "rollout_generate [2] stage_end", "ref_compute_log_prob [2] schedule"}));
  EXPECT_EQ(h.captures()[1].stage, "ref_compute_log_prob");
  EXPECT_EQ(h.captures()[1].role, "ref");
}

TEST(CaptureControllerSamplingTest, SubStepsEmittedByNestedCodeCountForTheOpenStage) {
  // verl engine workers: train_batch and forward_backward run inside actor_update; their
  // sub-steps count for the update's schedule.
  config::ProcessPlan p = WithSchedule(Discrete({"actor_update"}),
                                       MakeSchedule(0, 1, 0, 1, 0, SubStepKind::kMiniBatch));
  Harness h(MakePlan(StepList({1})), p);
  h.StepBegin(1).StageBegin("actor_update").StageBegin("train_batch");
  for (int m = 0; m < 4; ++m) h.Stage("forward_backward").MiniBatches(1);
  h.StageEnd().StageEnd().StepEnd();
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{"actor_update.part1: mini_batch [1, 2)",
                                                  "actor_update.part2: mini_batch [3, 4)"}));
}

TEST(CaptureControllerSamplingTest, StageEndInsideAnActivePeriodFlushesItMarkedCut) {
  config::ProcessPlan p = WithTokens(Discrete(), 30, 70);
  Harness h(MakePlan(StepList({1})), p);
  h.StepBegin(1).StageBegin("rollout_generate", "rollout").Decodes(50).StageEnd();
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{"rollout_generate: decode [30, 50) cut"}));
  EXPECT_EQ(h.captures()[0].reason, "stage_end");
}

TEST(CaptureControllerSamplingTest, WarmupIsNeverRecorded) {
  config::ProcessPlan p = WithSchedule(Discrete(), MakeSchedule(0, 0, 3, 1, 1, SubStepKind::kMiniBatch));
  Harness h(MakePlan(StepList({1})), p);
  h.StepBegin(1).StageBegin("actor_update");
  for (int k = 0; k < 3; ++k) {
    EXPECT_FALSE(h.ctl().recording()) << k;
    h.MiniBatches(1);
  }
  EXPECT_TRUE(h.ctl().recording());
  h.MiniBatches(1).StageEnd().StepEnd();
  EXPECT_EQ(Sampled(h), (std::vector<std::string>{"actor_update: mini_batch [3, 4)"}));
}

}  // namespace
}  // namespace rlprof::runtime
