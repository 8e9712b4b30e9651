// CaptureController: end-to-end, continuous, discrete and MindSpeed-RL windows, tolerance of
// unbalanced calls, disabled processes. Schedules, token windows, backstop and budget are in
// capture_controller_schedule_test.cc.
#include "src/runtime/capture_controller.h"

#include <gtest/gtest.h>

#include "src/runtime/capture_controller_test_util.h"

namespace rlprof::runtime {
namespace {

using testing::AllSteps;
using testing::Discrete;
using testing::EndToEnd;
using testing::Harness;
using testing::MakePlan;
using testing::StepList;
using testing::StepRange;
using testing::Summaries;

// A GRPO-like step on an actor rank: stages inside, some nested.
void RunStep(Harness& h, int64_t step) {
  h.StepBegin(step);
  h.Stage("rollout_generate", "rollout");
  h.Stage("ref_compute_log_prob", "ref");
  h.Stage("actor_compute_log_prob");
  h.StageBegin("actor_update").StageBegin("train_batch").Stage("forward_backward");
  h.StageEnd().StageEnd();
  h.StepEnd();
}

TEST(CaptureControllerEndToEndTest, OpensOneWindowPerSelectedStep) {
  Harness h(MakePlan(StepList({1, 2, 5})), EndToEnd());
  for (int64_t s = 1; s <= 6; ++s) RunStep(h, s);
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] step_end", "e2e [2] step_end", "e2e [5] step_end"}));
  for (const auto& c : h.captures()) {
    EXPECT_EQ(c.role, "");
    EXPECT_EQ(c.stage, "");
    EXPECT_EQ(c.part, 0);
  }
}

TEST(CaptureControllerEndToEndTest, StagesInsideTheStepWindowAreOnlyRanges) {
  Harness h(MakePlan(StepList({2})), EndToEnd());
  h.StepBegin(2);
  EXPECT_EQ(h.last_actions(), 2u);  // open, record_on
  h.StageBegin("actor_update");
  EXPECT_EQ(h.last_actions(), 0u);
  h.StageEnd();
  EXPECT_EQ(h.last_actions(), 0u);
  EXPECT_EQ(h.ctl().open_scope(), "e2e");
  h.StepEnd();
  EXPECT_EQ(h.last_actions(), 2u);  // record_off, close
  EXPECT_FALSE(h.ctl().window_open());
}

TEST(CaptureControllerEndToEndTest, StepsNotSelectedProduceNothing) {
  Harness h(MakePlan(StepList({5})), EndToEnd());
  for (int64_t s = 1; s <= 4; ++s) RunStep(h, s);
  EXPECT_EQ(h.total_actions(), 0u);
  EXPECT_TRUE(h.captures().empty());
}

TEST(CaptureControllerEndToEndTest, StepZeroNeverFiresForAllSteps) {
  Harness h(MakePlan(AllSteps()), EndToEnd());
  h.Step(0).Step(1);
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] step_end"}));
}

TEST(CaptureControllerContinuousTest, ConsecutiveSelectedStepsShareOneWindow) {
  // Reference §9.2: steps [1, 2, 5] => windows {1, 2} and {5}.
  Harness h(MakePlan(StepList({1, 2, 5}), /*continuous=*/true), EndToEnd());
  for (int64_t s = 1; s <= 6; ++s) RunStep(h, s);
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-2 [1,2] step_end", "e2e [5] step_end"}));
  EXPECT_EQ(h.captures()[0].open_steps, (std::vector<int64_t>{1}));
}

TEST(CaptureControllerContinuousTest, RangeSelectionIsOneRunNamedByItsPlannedSteps) {
  Harness h(MakePlan(StepRange(3, 6), true), EndToEnd());
  for (int64_t s = 1; s <= 8; ++s) RunStep(h, s);
  EXPECT_EQ(h.Summaries(), (Summaries{"steps3-5 [3,4,5] step_end"}));
}

TEST(CaptureControllerContinuousTest, WindowStaysOpenBetweenStepsOfTheRun) {
  Harness h(MakePlan(StepList({1, 2}), true), EndToEnd());
  h.Step(1);
  EXPECT_TRUE(h.ctl().window_open());
  EXPECT_EQ(h.ctl().open_scope(), "steps1-2");
  h.Step(2);
  EXPECT_FALSE(h.ctl().window_open());
}

TEST(CaptureControllerContinuousTest, RunCutShortByStopKeepsPlannedScopeAndRealSteps) {
  Harness h(MakePlan(StepList({1, 2, 3}), true), EndToEnd());
  h.Step(1).Step(2).Stop();
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-3 [1,2] shutdown"}));
}

TEST(CaptureControllerContinuousTest, NonConsecutiveNextStepClosesTheRun) {
  Harness h(MakePlan(StepList({1, 2, 7}), true), EndToEnd());
  h.Step(1).StepBegin(7);  // step 2 never ran: the run ends, step 7 opens its own window
  ASSERT_EQ(h.captures().size(), 2u);
  EXPECT_EQ(h.captures()[0].Summary(), "steps1-2 [1] step_end");
  EXPECT_EQ(h.ctl().open_scope(), "e2e");
  h.StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-2 [1] step_end", "e2e [7] step_end"}));
}

TEST(CaptureControllerContinuousTest, UnboundedSelectionIsNamedStepsAToEnd) {
  Harness h(MakePlan(AllSteps(), true), EndToEnd());
  h.Step(1).Step(2).Step(3).Stop();
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-end [1,2,3] shutdown"}));
}

TEST(CaptureControllerContinuousTest, HasNoEffectInDiscreteMode) {
  Harness h(MakePlan(StepList({1, 2}), true), Discrete({"actor_update"}));
  RunStep(h, 1);
  RunStep(h, 2);
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] stage_end", "actor_update [2] stage_end"}));
}

TEST(CaptureControllerDiscreteTest, OneWindowPerAllowedStageCall) {
  Harness h(MakePlan(StepList({2})), Discrete({"ref_compute_log_prob", "actor_update"}));
  RunStep(h, 1);
  RunStep(h, 2);
  RunStep(h, 3);
  EXPECT_EQ(h.Summaries(),
            (Summaries{"ref_compute_log_prob [2] stage_end", "actor_update [2] stage_end"}));
  EXPECT_EQ(h.captures()[0].role, "ref");
  EXPECT_EQ(h.captures()[0].stage, "ref_compute_log_prob");
  EXPECT_EQ(h.captures()[1].role, "actor");
}

TEST(CaptureControllerDiscreteTest, EmptyAllowListCapturesEveryOutermostStageCall) {
  Harness h(MakePlan(StepList({1})), Discrete());
  RunStep(h, 1);
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] stage_end",
                                      "ref_compute_log_prob [1] stage_end",
                                      "actor_compute_log_prob [1] stage_end",
                                      "actor_update [1] stage_end"}));
}

TEST(CaptureControllerDiscreteTest, StagesOutsideTheAllowListProduceNothing) {
  Harness h(MakePlan(StepList({1})), Discrete({"critic_update"}));
  RunStep(h, 1);
  EXPECT_EQ(h.total_actions(), 0u);
}

TEST(CaptureControllerDiscreteTest, NestedStageInsideAnOpenStageWindowOpensNothing) {
  Harness h(MakePlan(StepList({1})), Discrete());
  h.StepBegin(1).StageBegin("actor_update");
  h.StageBegin("train_batch");
  EXPECT_EQ(h.last_actions(), 0u);
  h.StageEnd();
  EXPECT_EQ(h.last_actions(), 0u);
  EXPECT_TRUE(h.ctl().window_open());
  h.StageEnd();
  EXPECT_EQ(h.last_actions(), 2u);
  h.StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] stage_end"}));
}

TEST(CaptureControllerDiscreteTest, AllowedStageNestedInADisallowedOneOpensItsWindow) {
  Harness h(MakePlan(StepList({1})), Discrete({"train_batch"}));
  RunStep(h, 1);
  EXPECT_EQ(h.Summaries(), (Summaries{"train_batch [1] stage_end"}));
}

TEST(CaptureControllerDiscreteTest, StageCallOutsideAnyStepOpensNothing) {
  Harness h(MakePlan(AllSteps()), Discrete());
  h.Stage("actor_update");  // before the first step
  h.Step(1);
  h.Stage("actor_update");  // between steps
  EXPECT_EQ(h.total_actions(), 0u);
}

TEST(CaptureControllerDiscreteTest, StageWindowStillOpenAtStepEndClosesWithStepEnd) {
  Harness h(MakePlan(StepList({1, 2})), Discrete());
  h.StepBegin(1).StageBegin("actor_update").StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] step_end"}));
  h.StageEnd();  // the late end pops the stack, nothing else
  EXPECT_EQ(h.last_actions(), 0u);
  EXPECT_EQ(h.ctl().stage_depth(), 0u);
  h.StepBegin(2).Stage("actor_update").StepEnd();
  EXPECT_EQ(h.captures().size(), 2u);
}

TEST(CaptureControllerDiscreteTest, RepeatedStageCallsInAStepAreSeparateWindows) {
  Harness h(MakePlan(StepList({1})), Discrete({"actor_compute_log_prob"}));
  h.StepBegin(1).Stage("actor_compute_log_prob").Stage("actor_compute_log_prob").StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_compute_log_prob [1] stage_end",
                                      "actor_compute_log_prob [1] stage_end"}));
}

// MindSpeed-RL `stage: all`: the lead's config layer turns it into an end-to-end plan for role
// "integrated" with steps [start, end). MindSpeed only knows iteration starts (prof_iteration
// is incremented at the end of the actor update), so steps are never ended explicitly.
TEST(CaptureControllerMindSpeedTest, StageAllIsOneEndToEndWindowPerIterationOfTheRange) {
  Harness h(MakePlan(StepRange(2, 4)), EndToEnd({"integrated"}));
  for (int64_t it = 1; it <= 5; ++it) {
    h.StepBegin(it);
    h.Stage("actor_generate").Stage("actor_compute_log_prob").Stage("actor_update");
  }
  h.Stop();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [2] step_end", "e2e [3] step_end"}));
}

TEST(CaptureControllerMindSpeedTest, StageListIsDiscreteWithAnAllowList) {
  Harness h(MakePlan(StepRange(1, 3)), Discrete({"actor_generate", "actor_update"}));
  for (int64_t it = 1; it <= 3; ++it) {
    h.StepBegin(it);
    h.Stage("actor_generate").Stage("reference_compute_log_prob").Stage("actor_update");
  }
  h.Stop();
  // Captured under rlprof's name of the stage (the same scope verl-named code gets).
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] stage_end", "actor_update [1] stage_end",
                                      "rollout_generate [2] stage_end", "actor_update [2] stage_end"}));
}

TEST(CaptureControllerToleranceTest, StopInsideAnOpenWindowClosesItWithShutdown) {
  Harness h(MakePlan(StepList({1})), Discrete());
  h.StepBegin(1).StageBegin("actor_update").StageBegin("train_batch").Stop();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] shutdown"}));
  EXPECT_FALSE(h.ctl().window_open());
  EXPECT_TRUE(h.ctl().stopped());
}

TEST(CaptureControllerToleranceTest, EventsAfterStopProduceNothing) {
  Harness h(MakePlan(AllSteps()), EndToEnd());
  h.Step(1).Stop();
  const size_t before = h.total_actions();
  RunStep(h, 2);
  h.Stop();
  EXPECT_EQ(h.total_actions(), before);
}

TEST(CaptureControllerToleranceTest, DoubleStepEndIsIgnored) {
  Harness h(MakePlan(StepList({1, 2})), EndToEnd());
  h.StepBegin(1).StepEnd().StepEnd().StepEnd();
  h.Step(2);
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] step_end", "e2e [2] step_end"}));
}

TEST(CaptureControllerToleranceTest, UnmatchedStageEndIsIgnored) {
  Harness h(MakePlan(StepList({1})), Discrete());
  h.StageEnd().StageEnd();
  h.StepBegin(1).StageEnd().StageBegin("actor_update").StageEnd().StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] stage_end"}));
  EXPECT_EQ(h.ctl().stage_depth(), 0u);
}

TEST(CaptureControllerToleranceTest, StepBeginWithoutStepEndEndsThePreviousStep) {
  Harness h(MakePlan(StepList({1, 2})), EndToEnd());
  h.StepBegin(1).StepBegin(2).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] step_end", "e2e [2] step_end"}));
}

TEST(CaptureControllerToleranceTest, VeryDeepStageNestingIsCountedAndUnwound) {
  Harness h(MakePlan(StepList({1})), Discrete({"leaf"}));
  h.StepBegin(1);
  for (int i = 0; i < 3000; ++i) h.StageBegin("outer");
  EXPECT_EQ(h.ctl().stage_depth(), 3000u);
  for (int i = 0; i < 3000; ++i) h.StageEnd();
  EXPECT_EQ(h.ctl().stage_depth(), 0u);
  h.Stage("leaf").StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"leaf [1] stage_end"}));
}

TEST(CaptureControllerToleranceTest, ErrorClosesTheWindowWithReasonError) {
  Harness h(MakePlan(StepList({1, 2})), EndToEnd());
  h.StepBegin(1).Error().StepEnd().Step(2);
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] error", "e2e [2] step_end"}));
}

TEST(CaptureControllerDisabledTest, DisabledProcessNeverOpensAnything) {
  config::ProcessPlan proc = Discrete();
  proc.enabled = false;
  Harness h(MakePlan(AllSteps()), proc);
  for (int64_t s = 1; s <= 5; ++s) RunStep(h, s);
  h.MiniBatches(3).TickAt(h.now() + 1'000'000'000'000).Budget().Error().Stop();
  EXPECT_EQ(h.total_actions(), 0u);
  EXPECT_EQ(h.ctl().stage_depth(), 0u);  // not even tracked
}

TEST(CaptureControllerDisabledTest, EmptyStepSelectionNeverOpensAnything) {
  Harness h(MakePlan(config::StepSelection{}), EndToEnd());
  for (int64_t s = 1; s <= 5; ++s) RunStep(h, s);
  EXPECT_EQ(h.total_actions(), 0u);
}

TEST(WindowActionTest, ToStringAndReasonNamesMatchTheManifestVocabulary) {
  EXPECT_STREQ(CloseReasonName(CloseReason::kStepEnd), "step_end");
  EXPECT_STREQ(CloseReasonName(CloseReason::kStageEnd), "stage_end");
  EXPECT_STREQ(CloseReasonName(CloseReason::kSchedule), "schedule");
  EXPECT_STREQ(CloseReasonName(CloseReason::kBackstop), "backstop");
  EXPECT_STREQ(CloseReasonName(CloseReason::kBudget), "budget");
  EXPECT_STREQ(CloseReasonName(CloseReason::kShutdown), "shutdown");
  EXPECT_STREQ(CloseReasonName(CloseReason::kError), "error");
  WindowAction a;
  a.type = WindowAction::Type::kClose;
  a.scope = "actor_update.part2";
  a.steps = {2, 3};
  a.role = "actor";
  a.stage = "actor_update";
  a.reason = CloseReason::kSchedule;
  EXPECT_EQ(a.ToString(), "close actor_update.part2 steps=[2, 3] role=actor stage=actor_update "
                          "reason=schedule");
}

}  // namespace
}  // namespace rlprof::runtime
