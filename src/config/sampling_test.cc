#include "src/config/sampling.h"

#include <gtest/gtest.h>

#include "src/config/captures.h"
#include "src/config/loader.h"

namespace rlprof::config {
namespace {

Schedule Make(int64_t skip_first, int64_t wait, int64_t warmup, int64_t active, int64_t repeat) {
  Schedule s;
  s.skip_first = skip_first;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  return s;
}

bool Recording(ScheduleAction a) {
  return a == ScheduleAction::kRecord || a == ScheduleAction::kRecordAndSave;
}

// The periods a step-by-step walk of ActionAt gives (torch's transition rules): a period
// opens when recording starts, closes after RECORD_AND_SAVE, and the stage end at k = count
// cuts an open one.
std::vector<SamplePeriod> Walk(const Schedule& s, int64_t count) {
  std::vector<SamplePeriod> out;
  bool open = false;
  for (int64_t k = 0; k <= count; ++k) {
    if (k > 0 && open && ActionAt(s, k - 1) == ScheduleAction::kRecordAndSave) {
      out.back().size = k - out.back().first;
      out.back().complete = true;
      open = false;
    }
    if (k > 0 && open && !Recording(ActionAt(s, k))) {  // never reached with ActionAt
      out.back().size = k - out.back().first;
      open = false;
    }
    if (!open && Recording(ActionAt(s, k))) {
      out.push_back({k, 0, false});
      open = true;
    }
  }
  if (open) {
    out.back().size = count - out.back().first;
    out.back().complete = false;
  }
  return out;
}

TEST(SchedulePeriodsTest, WorkedExampleOfTheReferenceGivesTwoPeriods) {
  bool more = true;
  auto p = SchedulePeriods(Make(2, 1, 1, 2, 2), -1, &more);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, 4);
  EXPECT_EQ(p[0].size, 2);
  EXPECT_EQ(p[1].first, 8);
  EXPECT_FALSE(more);
  p = SchedulePeriods(Make(2, 1, 1, 2, 2), 9, &more);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].size, 1);
  EXPECT_FALSE(p[1].complete);
  EXPECT_EQ(PeriodText(SubStepKind::kMiniBatch, p[1]), "mini_batch 8 (cut by the stage end)");
}

TEST(SchedulePeriodsTest, MatchAStepByStepWalkForEveryParameterCombination) {
  for (int64_t skip = 0; skip <= 3; ++skip)
    for (int64_t wait = 0; wait <= 2; ++wait)
      for (int64_t warmup = 0; warmup <= 2; ++warmup)
        for (int64_t active = 1; active <= 3; ++active)
          for (int64_t repeat = 0; repeat <= 3; ++repeat)
            for (int64_t count = 0; count <= 20; ++count) {
              Schedule s = Make(skip, wait, warmup, active, repeat);
              bool more = false;
              auto got = SchedulePeriods(s, count, &more, 1000);
              auto want = Walk(s, count);
              ASSERT_EQ(got.size(), want.size()) << skip << wait << warmup << active << repeat << " n=" << count;
              for (size_t i = 0; i < got.size(); ++i) {
                EXPECT_EQ(got[i].first, want[i].first);
                EXPECT_EQ(got[i].size, want[i].size);
                EXPECT_EQ(got[i].complete, want[i].complete);
              }
            }
}

TEST(SchedulePeriodsTest, UnboundedTokenWindowRunsToTheStageEnd) {
  Schedule t = TokenWindowSchedule(30, std::nullopt);
  bool more = false;
  auto p = SchedulePeriods(t, 128, &more);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].first, 30);
  EXPECT_EQ(p[0].size, 98);
  EXPECT_FALSE(p[0].complete);
  t = TokenWindowSchedule(30, 70);
  p = SchedulePeriods(t, 128, &more);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(PeriodText(SubStepKind::kDecode, p[0]), "decode 30-69");
}

TEST(SchedulePeriodsTest, RepeatZeroWithUnknownCountListsOneCycleAndSaysMore) {
  bool more = false;
  auto p = SchedulePeriods(Make(0, 1, 0, 1, 0), -1, &more);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(more);
  p = SchedulePeriods(Make(0, 0, 0, 1, 0), 500, &more, 64);
  EXPECT_EQ(p.size(), 64u);
  EXPECT_TRUE(more);
}

// The issue's case: a micro-batch schedule on the actor block and a decode window on the
// rollout, in verl's fused worker, both apply; the plan lists what each records.
TEST(PlanSamplingTest, RolloutDecodeWindowAndActorMicroBatchScheduleBothApply) {
  auto plan = LoadPlanFromString(R"(
global_profiler: {tool: rlprof, steps: [2]}
actor_rollout_ref:
  actor:
    profiler:
      enable: true
      tool_config:
        rlprof:
          discrete: true
          stages: [actor_update]
          schedule: {unit: micro_batch, skip_first: 1, wait: 1, warmup: 1, active: 2, repeat: 2}
  rollout:
    profiler:
      enable: true
      tool_config: {rlprof: {discrete: true, stages: [rollout_generate], profile_token_start: 30, profile_token_end: 70}}
)", "v.yaml", {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ProcessPlan p = ResolveForProcess(*plan, {"actor", "rollout", "ref"}, 0);
  ASSERT_EQ(p.schedules.size(), 2u);
  const StageSchedule* upd = p.ScheduleFor("actor", "actor_update");
  ASSERT_NE(upd, nullptr);
  EXPECT_EQ(upd->schedule.unit, SubStepKind::kMicroBatch);
  const StageSchedule* gen = p.ScheduleFor("rollout", "rollout_generate");
  ASSERT_NE(gen, nullptr);
  EXPECT_TRUE(gen->token_window);
  EXPECT_EQ(p.ScheduleFor("rollout", "weight_sync"), nullptr);

  EstimateModel m;
  m.sub_steps = {{SubStepKind::kDecode, 128}, {SubStepKind::kMicroBatch, 8}};
  CaptureSummary sum = EnumerateCaptures(*plan, {}, m);
  std::vector<std::string> got;
  for (const auto& r : sum.rows) got.push_back(r.worker + ": " + r.scope + ": " + r.sub_steps);
  EXPECT_EQ(got, (std::vector<std::string>{"actor_rollout_ref: actor_update.part1: micro_batch 3-4",
                                           "actor_rollout_ref: actor_update.part2: micro_batch 7 (cut by the stage end)",
                                           "actor_rollout_ref: rollout_generate: decode 30-69"}));
  EXPECT_TRUE(sum.warnings.empty()) << sum.warnings.front();
}

TEST(PlanSamplingTest, ScheduleThatCannotApplyIsAWarningWithTheReason) {
  auto plan = LoadPlanFromString(R"(
rlprof:
  steps: [1]
  roles:
    actor:
      discrete: true
      stages: [actor_compute_log_prob, actor_update]
      schedule:
        - {stage: actor_update, unit: decode, active: 1}
        - {unit: decode, active: 2}
        - {stage: ref_compute_log_prob, unit: micro_batch, active: 1}
        - {unit: step, active: 1}
)", "n.yaml", {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  CaptureSummary sum = EnumerateCaptures(*plan, {}, {});
  std::string all;
  for (const auto& w : sum.warnings) all += w + "\n";
  EXPECT_NE(all.find("the known hooks never count decode inside actor_update (it runs: "
                     "mini_batch, micro_batch), so its counter stays at 0 and it records the "
                     "whole stage"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("no captured stage of role actor runs decode sub-steps"), std::string::npos) << all;
  EXPECT_NE(all.find("stage ref_compute_log_prob is not captured there"), std::string::npos) << all;
  EXPECT_NE(all.find("a step never advances inside a stage"), std::string::npos) << all;
}

TEST(PlanSamplingTest, TwoSchedulesForOneStageAreAnError) {
  auto plan = LoadPlanFromString(R"(
rlprof:
  steps: [1]
  roles:
    actor:
      discrete: true
      schedule:
        - {stage: actor_update, unit: mini_batch, active: 1}
        - {stage: actor_update, unit: micro_batch, active: 1}
)", "n.yaml", {}, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("stage actor_update already has a schedule in this list"),
            std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace rlprof::config
