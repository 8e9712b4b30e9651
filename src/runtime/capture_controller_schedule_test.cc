// CaptureController with schedules, token windows, the time backstop and budgets, plus
// randomized sequences that must never unbalance the open/close protocol.
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/runtime/capture_controller.h"
#include "src/runtime/capture_controller_test_util.h"

namespace rlprof::runtime {
namespace {

using config::SubStepKind;
using testing::AllSteps;
using testing::Discrete;
using testing::EndToEnd;
using testing::Harness;
using testing::MakePlan;
using testing::MakeSchedule;
using testing::StepList;
using testing::Summaries;

using testing::WithSchedule;
using testing::WithTokens;

TEST(CaptureControllerScheduleTest, EndToEndScheduleRecordsOnlyTheActiveMiniBatches) {
  // skip_first=1, active=2, repeat=1: mini-batch 0 skipped, 1 and 2 recorded as one capture.
  Harness h(MakePlan(StepList({2})), WithSchedule(EndToEnd(), MakeSchedule(1, 0, 0, 2, 1)));
  h.StepBegin(2);
  EXPECT_FALSE(h.ctl().window_open());  // k = 0 is NONE
  EXPECT_TRUE(h.ctl().host_window_open());
  h.MiniBatches(1);  // k = 1: RECORD
  EXPECT_TRUE(h.ctl().recording());
  EXPECT_EQ(h.ctl().open_scope(), "e2e");  // repeat == 1: no .part suffix
  h.MiniBatches(1);  // k = 2: RECORD_AND_SAVE
  EXPECT_TRUE(h.ctl().recording());
  h.MiniBatches(1);  // k = 3: NONE, cycle saved
  EXPECT_FALSE(h.ctl().recording());
  h.MiniBatches(5).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [2] schedule"}));
  EXPECT_EQ(h.ctl().tracker(), nullptr);
}

TEST(CaptureControllerScheduleTest, RepeatingScheduleSplitsTheWindowIntoParts) {
  // wait=1, active=1, repeat=0: k = 1, 3, 5 ... are RECORD_AND_SAVE cycles.
  Harness h(MakePlan(StepList({3})), WithSchedule(EndToEnd(), MakeSchedule(0, 1, 0, 1, 0)));
  h.StepBegin(3).MiniBatches(4).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e.part1 [3] schedule", "e2e.part2 [3] schedule"}));
  EXPECT_EQ(h.captures()[0].part, 1);
  EXPECT_EQ(h.captures()[1].part, 2);
}

TEST(CaptureControllerScheduleTest, StepEndFlushesAPartialCycle) {
  Harness h(MakePlan(StepList({3})), WithSchedule(EndToEnd(), MakeSchedule(0, 1, 0, 3, 0)));
  h.StepBegin(3).MiniBatches(2).StepEnd();  // k = 2 is RECORD (mid-cycle)
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e.part1 [3] step_end"}));
}

TEST(CaptureControllerScheduleTest, BackToBackActiveCyclesCloseAndReopenOnOneSubStep) {
  Harness h(MakePlan(StepList({1})), WithSchedule(EndToEnd(), MakeSchedule(0, 0, 0, 1, 3)));
  h.StepBegin(1);
  EXPECT_EQ(h.ctl().open_scope(), "e2e.part1");  // k = 0 is already RECORD_AND_SAVE
  h.MiniBatches(1);
  EXPECT_EQ(h.last_actions(), 4u);  // record_off, close, open, record_on
  h.MiniBatches(5).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e.part1 [1] schedule", "e2e.part2 [1] schedule",
                                      "e2e.part3 [1] schedule"}));
}

TEST(CaptureControllerScheduleTest, WarmupRecordsNothingAndStopInWarmupSavesNothing) {
  Harness h(MakePlan(StepList({1})), WithSchedule(EndToEnd(), MakeSchedule(0, 0, 2, 1, 1)));
  h.StepBegin(1);
  EXPECT_FALSE(h.ctl().window_open());  // k = 0 is WARMUP
  h.MiniBatches(1);
  EXPECT_FALSE(h.ctl().window_open());  // k = 1 is WARMUP
  h.StepEnd();
  EXPECT_TRUE(h.captures().empty());
}

TEST(CaptureControllerScheduleTest, ScheduleRestartsInEveryWindow) {
  Harness h(MakePlan(StepList({1, 2})), WithSchedule(EndToEnd(), MakeSchedule(1, 0, 0, 1, 1)));
  h.StepBegin(1).MiniBatches(3).StepEnd().StepBegin(2).MiniBatches(3).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] schedule", "e2e [2] schedule"}));
}

TEST(CaptureControllerScheduleTest, SubStepsOfAnotherUnitDoNotAdvanceTheSchedule) {
  Harness h(MakePlan(StepList({1})), WithSchedule(EndToEnd(), MakeSchedule(1, 0, 0, 1, 1)));
  h.StepBegin(1).Decodes(10).SubStep(SubStepKind::kStep, 3);
  EXPECT_EQ(h.ctl().tracker()->k(), 0);
  EXPECT_EQ(h.total_actions(), 0u);
  h.MiniBatches(1);
  EXPECT_TRUE(h.ctl().recording());
}

TEST(CaptureControllerScheduleTest, DiscreteScheduleAppliesOnlyToStagesThatRunItsUnit) {
  // verl: the update stage gets the schedule, other stages full traces.
  Harness h(MakePlan(StepList({2})), WithSchedule(Discrete(), MakeSchedule(1, 0, 0, 2, 0)));
  h.StepBegin(2).Stage("actor_compute_log_prob");
  h.StageBegin("actor_update", "actor", SubStepKind::kMiniBatch).MiniBatches(7).StageEnd();
  h.StepEnd();
  // k: 0 skip | 1 R, 2 RS | 3 R, 4 RS | 5 R, 6 RS | 7 R (flushed by the stage end)
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_compute_log_prob [2] stage_end",
                                      "actor_update.part1 [2] schedule",
                                      "actor_update.part2 [2] schedule",
                                      "actor_update.part3 [2] schedule",
                                      "actor_update.part4 [2] stage_end"}));
  EXPECT_EQ(h.captures()[1].stage, "actor_update");
}

// The worked example of docs/capture-windows.md (reference §6 timeline on mini-batches).
TEST(CaptureControllerScheduleTest, WorkedTimelineInAStageWindowGivesTwoParts) {
  const config::ProcessPlan proc = WithSchedule(Discrete(), MakeSchedule(2, 1, 1, 2, 2));
  Harness h(MakePlan(StepList({3})), proc);
  h.StepBegin(3).StageBegin("actor_update", "actor", SubStepKind::kMiniBatch);
  std::vector<bool> open_at;  // window_open() at k = 0 .. 11
  open_at.push_back(h.ctl().window_open());
  for (int k = 1; k <= 11; ++k) open_at.push_back(h.MiniBatches(1).ctl().window_open());
  EXPECT_EQ(open_at, (std::vector<bool>{false, false, false, false, true, true, false, false,
                                        true, true, false, false}));
  h.StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update.part1 [3] schedule",
                                      "actor_update.part2 [3] schedule"}));
  // The loop ending at k = 8 flushes part 2 with the stage end.
  Harness cut(MakePlan(StepList({3})), proc);
  cut.StepBegin(3).StageBegin("actor_update", "actor", SubStepKind::kMiniBatch).MiniBatches(8);
  cut.StageEnd();
  EXPECT_EQ(cut.Summaries(), (Summaries{"actor_update.part1 [3] schedule",
                                        "actor_update.part2 [3] stage_end"}));
}

TEST(CaptureControllerScheduleTest, StageOfAnotherRoleIsCapturedInFull) {
  Harness h(MakePlan(StepList({1})), WithSchedule(Discrete(), MakeSchedule(3, 0, 0, 1, 1)));
  h.StepBegin(1).StageBegin("compute_values", "critic", SubStepKind::kDecode);
  h.MiniBatches(5).StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"compute_values [1] stage_end"}));
}

TEST(CaptureControllerScheduleTest, ContinuousWindowWithStepUnitAdvancesAsStepsBegin) {
  // MindSpeed-like iteration schedule over a continuous run 1..4: skip_first=1, active=2.
  Harness h(MakePlan(StepList({1, 2, 3, 4}), true),
            WithSchedule(EndToEnd(), MakeSchedule(1, 0, 0, 2, 1, SubStepKind::kStep)));
  h.StepBegin(1).StepEnd();
  EXPECT_FALSE(h.ctl().window_open());  // k = 0: skipped
  EXPECT_TRUE(h.ctl().host_window_open());
  h.StepBegin(2);  // k = 1: RECORD starts with step 2
  ASSERT_EQ(h.captures().size(), 1u);
  EXPECT_EQ(h.captures()[0].open_steps, (std::vector<int64_t>{2}));
  h.StepEnd().Step(3);
  EXPECT_TRUE(h.ctl().window_open());  // k = 2: RECORD_AND_SAVE
  h.StepBegin(4);                       // k = 3: NONE, cycle saved
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-4 [2,3] schedule"}));
  h.StepEnd();
  EXPECT_FALSE(h.ctl().host_window_open());
  h.SubStep(SubStepKind::kStep, 3);  // ignored
  EXPECT_EQ(h.captures().size(), 1u);
}

TEST(CaptureControllerScheduleTest, ContinuousRunKeepsOneScheduleAcrossItsSteps) {
  Harness h(MakePlan(StepList({1, 2}), true), WithSchedule(EndToEnd(), MakeSchedule(0, 0, 0, 3, 1)));
  h.StepBegin(1).MiniBatches(1).StepEnd();  // k = 1
  h.StepBegin(2).MiniBatches(1);            // k = 2: RECORD_AND_SAVE
  EXPECT_TRUE(h.ctl().window_open());
  h.MiniBatches(1);  // k = 3: saved
  h.StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"steps1-2 [1,2] schedule"}));
}

TEST(CaptureControllerScheduleTest, StepUnitCaptureNeverNamesAStepThatDidNotRun) {
  Harness h(MakePlan(StepList({1, 2, 3}), true),
            WithSchedule(EndToEnd(), MakeSchedule(1, 0, 0, 1, 1, SubStepKind::kStep)));
  h.Step(1).Stop();  // step 2 never begins
  EXPECT_TRUE(h.captures().empty());
}

TEST(CaptureControllerTokenWindowTest, DecodeWindowRecordsIterationsStartToEnd) {
  Harness h(MakePlan(StepList({1})), WithTokens(Discrete({"rollout_generate"}), 2, 5));
  h.StepBegin(1).StageBegin("rollout_generate", "rollout", SubStepKind::kDecode);
  EXPECT_FALSE(h.ctl().window_open());  // iteration 0
  h.Decodes(1);
  EXPECT_FALSE(h.ctl().window_open());  // iteration 1
  h.Decodes(1);
  EXPECT_TRUE(h.ctl().window_open());  // iteration 2 = token_start
  EXPECT_EQ(h.ctl().open_scope(), "rollout_generate");  // repeat 1: plain scope
  h.Decodes(2);
  EXPECT_TRUE(h.ctl().window_open());  // iteration 4 = token_end - 1
  h.Decodes(1);
  EXPECT_FALSE(h.ctl().window_open());  // iteration 5 = token_end
  h.Decodes(20).StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] schedule"}));
  EXPECT_EQ(h.captures()[0].role, "rollout");
}

TEST(CaptureControllerTokenWindowTest, WindowWithoutEndRunsToTheStageEnd) {
  Harness h(MakePlan(StepList({1})), WithTokens(Discrete(), 3, std::nullopt));
  h.StepBegin(1).StageBegin("rollout_generate", "rollout", SubStepKind::kDecode);
  h.Decodes(100).StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] stage_end"}));
}

TEST(CaptureControllerTokenWindowTest, EndWithoutStartStartsAtIterationZero) {
  Harness h(MakePlan(StepList({1})), WithTokens(EndToEnd({"rollout"}), std::nullopt, 2));
  h.StepBegin(1);
  EXPECT_TRUE(h.ctl().window_open());
  h.Decodes(2).StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] schedule"}));
}

TEST(CaptureControllerTokenWindowTest, DecodeStageGetsTheTokenWindowAndUpdateStageTheSchedule) {
  config::ProcessPlan proc = WithSchedule(WithTokens(Discrete(), 1, 2), MakeSchedule(0, 0, 0, 1, 1));
  Harness h(MakePlan(StepList({1})), proc);
  h.StepBegin(1);
  h.StageBegin("rollout_generate", "rollout", SubStepKind::kDecode).Decodes(5).StageEnd();
  h.StageBegin("actor_update", "actor", SubStepKind::kMiniBatch).MiniBatches(5).StageEnd();
  h.StepEnd();
  EXPECT_EQ(h.Summaries(),
            (Summaries{"rollout_generate [1] schedule", "actor_update [1] schedule"}));
}

TEST(CaptureControllerBackstopTest, TickClosesAScheduledCaptureOpenTooLong) {
  config::Plan plan = MakePlan(StepList({1, 2}));
  plan.backstop_s = 10;
  Harness h(plan, WithTokens(Discrete(), 0, 1000));
  h.StepBegin(1).StageBegin("rollout_generate", "rollout", SubStepKind::kDecode);
  ASSERT_TRUE(h.ctl().window_open());
  const int64_t opened = h.captures()[0].open_ns;
  h.TickAt(opened + 10'000'000'000);  // exactly backstop_s: not longer
  EXPECT_TRUE(h.ctl().window_open());
  h.TickAt(opened + 10'000'000'001);
  EXPECT_FALSE(h.ctl().window_open());
  EXPECT_EQ(h.Summaries(), (Summaries{"rollout_generate [1] backstop"}));
  h.Decodes(10);  // the rank wakes up: the rest of this stage call stays closed
  EXPECT_FALSE(h.ctl().window_open());
  h.StageEnd().StepEnd();
  h.StepBegin(2).StageBegin("rollout_generate", "rollout", SubStepKind::kDecode);
  EXPECT_TRUE(h.ctl().window_open());  // the next stage call opens again
}

TEST(CaptureControllerBackstopTest, UnscheduledWindowsAreNeverCutByTime) {
  config::Plan plan = MakePlan(StepList({1}));
  plan.backstop_s = 1;
  Harness h(plan, EndToEnd());
  h.StepBegin(1).TickAt(h.now() + 3'600'000'000'000);
  EXPECT_TRUE(h.ctl().window_open());
  h.StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"e2e [1] step_end"}));
}

TEST(CaptureControllerBackstopTest, ZeroBackstopDisablesIt) {
  config::Plan plan = MakePlan(StepList({1}));
  plan.backstop_s = 0;
  Harness h(plan, WithSchedule(EndToEnd(), MakeSchedule(0, 0, 0, 5, 1)));
  h.StepBegin(1).TickAt(h.now() + 3'600'000'000'000);
  EXPECT_TRUE(h.ctl().window_open());
}

TEST(CaptureControllerBackstopTest, NanOrHugeBackstopNeverCloses) {
  for (double backstop : {std::numeric_limits<double>::quiet_NaN(), 1e300, -5.0}) {
    config::Plan plan = MakePlan(StepList({1}));
    plan.backstop_s = backstop;
    Harness h(plan, WithSchedule(EndToEnd(), MakeSchedule(0, 0, 0, 5, 1)));
    h.StepBegin(1).TickAt(std::numeric_limits<int64_t>::max());
    EXPECT_TRUE(h.ctl().window_open()) << backstop;
  }
}

TEST(CaptureControllerBudgetTest, BudgetClosesTheCaptureAndTheRestOfTheStep) {
  Harness h(MakePlan(StepList({1, 2})), WithSchedule(EndToEnd(), MakeSchedule(0, 0, 0, 1, 0)));
  h.StepBegin(1).MiniBatches(1).Budget();
  EXPECT_FALSE(h.ctl().window_open());
  h.MiniBatches(3).StepEnd();
  h.StepBegin(2).StepEnd();
  EXPECT_EQ(h.Summaries(),
            (Summaries{"e2e.part1 [1] schedule", "e2e.part2 [1] budget", "e2e.part1 [2] step_end"}));
  h.Budget();  // nothing open: nothing to do
  EXPECT_EQ(h.last_actions(), 0u);
}

TEST(CaptureControllerBudgetTest, BudgetInDiscreteModeClosesWithBudget) {
  Harness h(MakePlan(StepList({1})), Discrete());
  h.StepBegin(1).StageBegin("actor_update").Budget().StageEnd().StepEnd();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update [1] budget"}));
}

TEST(CaptureControllerScheduleTest, StopDuringAScheduledCycleFlushesItWithShutdown) {
  Harness h(MakePlan(StepList({1})), WithSchedule(Discrete(), MakeSchedule(0, 0, 0, 4, 0)));
  h.StepBegin(1).StageBegin("actor_update", "actor", SubStepKind::kMiniBatch).MiniBatches(2);
  h.Stop();
  EXPECT_EQ(h.Summaries(), (Summaries{"actor_update.part1 [1] shutdown"}));
}

// Random event sequences over 100 steps in every mode: the protocol checker of the harness
// fails on any unbalanced open/close; at the end everything is closed.
TEST(CaptureControllerRandomTest, RandomSequencesNeverUnbalanceOpenAndClose) {
  std::mt19937_64 rng(20261122);
  const char* stages[] = {"rollout_generate", "actor_update", "ref_compute_log_prob", "train_batch"};
  size_t total_captures = 0;
  for (int trial = 0; trial < 60; ++trial) {
    config::Plan plan = MakePlan(trial % 3 == 0   ? AllSteps()
                                 : trial % 3 == 1 ? StepList({2, 3, 4, 10, 11, 50, 99})
                                                  : testing::StepRange(5, 40),
                                 trial % 2 == 0);
    plan.backstop_s = 0.05;
    config::ProcessPlan proc = (trial / 2) % 2 == 0 ? EndToEnd() : Discrete({"actor_update", "train_batch", "reference_compute_log_prob"});
    if (trial % 5 != 0) proc = WithSchedule(proc, MakeSchedule(rng() % 3, rng() % 3, rng() % 2, 1 + rng() % 3, rng() % 3));
    if (trial % 6 == 0)
      proc = WithSchedule(proc, MakeSchedule(rng() % 3, rng() % 2, rng() % 2, 1 + rng() % 2, rng() % 3,
                                             SubStepKind::kMicroBatch), "ref");
    if (trial % 7 == 0) proc = WithTokens(proc, 1, 4);
    Harness h(plan, proc);
    for (int64_t step = 1; step <= 100; ++step) {
      if (rng() % 10 != 0) h.StepBegin(step);
      const int events = static_cast<int>(rng() % 12);
      for (int e = 0; e < events; ++e) {
        switch (rng() % 9) {
          case 0: h.StageBegin(stages[rng() % 4], "actor",
                               rng() % 2 ? std::optional<SubStepKind>(SubStepKind::kMiniBatch)
                                         : std::optional<SubStepKind>(SubStepKind::kDecode));
            break;
          case 1: case 2: h.StageEnd(); break;
          case 3: h.MiniBatches(1 + static_cast<int>(rng() % 3)); break;
          case 4: h.Decodes(1 + static_cast<int>(rng() % 3)); break;
          case 5: h.TickAt(h.now() + static_cast<int64_t>(rng() % 100'000'000)); break;
          case 6: if (rng() % 8 == 0) h.Budget(); break;
          case 7: h.StageBegin(stages[rng() % 4]); break;
          case 8: h.SubStep(SubStepKind::kMicroBatch, 1 + static_cast<int>(rng() % 3)); break;
        }
        if (::testing::Test::HasFatalFailure()) return;
      }
      if (rng() % 10 != 0) h.StepEnd();
      if (rng() % 20 == 0) h.StepEnd();  // double end
    }
    h.Stop();
    EXPECT_FALSE(h.open()) << "trial " << trial;
    EXPECT_FALSE(h.ctl().window_open());
    for (const auto& c : h.captures()) {
      EXPECT_TRUE(c.closed);
      EXPECT_LE(c.open_ns, c.close_ns);
    }
    total_captures += h.captures().size();
  }
  EXPECT_GT(total_captures, 100u);  // the sequences really exercised the windows
}

}  // namespace
}  // namespace rlprof::runtime
