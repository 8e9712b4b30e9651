#include "src/runtime/schedule.h"

#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rlprof::runtime {
namespace {

using A = ScheduleAction;
using E = ScheduleEffect;

config::Schedule Sched(int64_t skip_first, int64_t wait, int64_t warmup, int64_t active,
                       int64_t repeat) {
  config::Schedule s;
  s.skip_first = skip_first;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  return s;
}

// An independent, literal transcription of torch.profiler.schedule's schedule_fn (reference
// §6; checked line by line against torch/profiler/profiler.py of pytorch/pytorch@0015978c),
// with the repeat test done in real (floating-point) division as torch does. The transition
// tables below are torch's `profile.action_map` from the same file.
A TorchScheduleFn(int64_t skip_first, int64_t wait, int64_t warmup, int64_t active,
                  int64_t repeat, int64_t step) {
  if (step < skip_first) return A::kNone;
  step -= skip_first;
  const int64_t num_steps = wait + warmup + active;
  if (repeat > 0 && static_cast<double>(step) / static_cast<double>(num_steps) >=
                        static_cast<double>(repeat))
    return A::kNone;
  const int64_t mod_step = step % num_steps;
  if (mod_step < wait) return A::kNone;
  if (mod_step < wait + warmup) return A::kWarmup;
  return mod_step < num_steps - 1 ? A::kRecord : A::kRecordAndSave;
}

TEST(ScheduleTest, ActionAtEqualsTorchScheduleFnForManyParameterCombinations) {
  int combos = 0;
  for (int64_t skip = 0; skip <= 3; ++skip)
    for (int64_t wait = 0; wait <= 3; ++wait)
      for (int64_t warmup = 0; warmup <= 2; ++warmup)
        for (int64_t active = 1; active <= 4; ++active)
          for (int64_t repeat = 0; repeat <= 3; ++repeat) {
            const config::Schedule s = Sched(skip, wait, warmup, active, repeat);
            for (int64_t k = 0; k < 100; ++k) {
              ASSERT_EQ(ActionAt(s, k), TorchScheduleFn(skip, wait, warmup, active, repeat, k))
                  << "skip_first=" << skip << " wait=" << wait << " warmup=" << warmup
                  << " active=" << active << " repeat=" << repeat << " k=" << k;
            }
            ++combos;
          }
  EXPECT_EQ(combos, 4 * 4 * 3 * 4 * 4);
}

TEST(ScheduleTest, ActionAtEqualsTorchScheduleFnForRandomLargerParameters) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t skip = static_cast<int64_t>(rng() % 30), wait = static_cast<int64_t>(rng() % 20),
                  warmup = static_cast<int64_t>(rng() % 10),
                  active = 1 + static_cast<int64_t>(rng() % 25),
                  repeat = static_cast<int64_t>(rng() % 6);
    const config::Schedule s = Sched(skip, wait, warmup, active, repeat);
    for (int64_t k = 0; k < 400; ++k)
      ASSERT_EQ(ActionAt(s, k), TorchScheduleFn(skip, wait, warmup, active, repeat, k))
          << "trial " << trial << " k=" << k;
  }
}

TEST(ScheduleTest, ActionAtMatchesTheWorkedTimelineOfTheReference) {
  // schedule(skip_first=2, wait=1, warmup=1, active=2, repeat=2), L = 4 (reference §6).
  const config::Schedule s = Sched(2, 1, 1, 2, 2);
  const std::vector<A> expected = {
      A::kNone,    A::kNone,   A::kNone,          A::kWarmup,
      A::kRecord,  A::kRecordAndSave, A::kNone,   A::kWarmup,
      A::kRecord,  A::kRecordAndSave, A::kNone,   A::kNone};
  for (size_t k = 0; k < expected.size(); ++k)
    EXPECT_EQ(ActionAt(s, static_cast<int64_t>(k)), expected[k]) << "k=" << k;
  for (int64_t k = 11; k < 1000; ++k) ASSERT_EQ(ActionAt(s, k), A::kNone) << "k=" << k;
}

TEST(ScheduleTest, ActionAtNamesActionsLikeTorch) {
  EXPECT_STREQ(ScheduleActionName(A::kNone), "NONE");
  EXPECT_STREQ(ScheduleActionName(A::kWarmup), "WARMUP");
  EXPECT_STREQ(ScheduleActionName(A::kRecord), "RECORD");
  EXPECT_STREQ(ScheduleActionName(A::kRecordAndSave), "RECORD_AND_SAVE");
}

TEST(ScheduleTest, AbsurdParametersDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // warmup + active overflows int64: the cycle length saturates at kMax.
  const config::Schedule s = Sched(0, 0, kMax / 2 + 1, kMax / 2 + 1, 0);
  EXPECT_EQ(ActionAt(s, 0), A::kWarmup);
  EXPECT_EQ(ActionAt(s, kMax / 2 + 1), A::kRecord);
  EXPECT_EQ(ActionAt(s, kMax - 1), A::kRecordAndSave);
  EXPECT_EQ(ActionAt(Sched(kMax, 0, 0, 1, 1), kMax - 1), A::kNone);
  const config::Schedule negative = Sched(-5, -1, -1, 2, -3);  // treated as 0 (validation rejects)
  EXPECT_EQ(ActionAt(negative, 0), A::kRecord);
  EXPECT_EQ(ActionAt(negative, 1), A::kRecordAndSave);
  EXPECT_EQ(ActionAt(negative, -7), A::kRecord);
}

TEST(ScheduleTest, DisabledScheduleRecordsEveryStep) {
  const config::Schedule s;  // active == 0
  for (int64_t k = 0; k < 10; ++k) EXPECT_EQ(ActionAt(s, k), A::kRecord);
}

TEST(ScheduleTest, ActiveOneGivesRecordAndSaveEveryStep) {
  const config::Schedule s = Sched(0, 0, 0, 1, 0);
  for (int64_t k = 0; k < 10; ++k) EXPECT_EQ(ActionAt(s, k), A::kRecordAndSave);
}

// Drives a tracker like torch's profiler: Start() at k = 0, Step() per prof.step(), and
// records which ProfilerStep#k rows land in which saved file (a row is recorded while
// tracing is started, i.e. in RECORD or RECORD_AND_SAVE).
struct Simulation {
  std::vector<std::vector<int64_t>> files;  // saved files with their ProfilerStep#k rows
  std::vector<int64_t> saved_at;            // k entered by the step() that saved the file
  std::vector<int64_t> current;
  bool tracing = false;

  void Apply(const ScheduleEffects& fx, int64_t k) {
    for (E e : fx) {
      if (e == E::kStart) {
        tracing = true;
        current.clear();
      } else if (e == E::kStop) {
        tracing = false;
      } else if (e == E::kSave) {
        files.push_back(current);
        saved_at.push_back(k);
        current.clear();
      }
    }
  }
  void Run(const config::Schedule& s, int64_t steps, bool stop_at_end) {
    ScheduleTracker t(s);
    Apply(t.Start(), 0);
    if (tracing) current.push_back(0);
    for (int64_t k = 1; k < steps; ++k) {
      Apply(t.Step(), k);
      EXPECT_EQ(t.k(), k);
      EXPECT_EQ(t.action(), ActionAt(s, k));
      EXPECT_EQ(t.recording(), tracing) << "k=" << k;
      if (tracing) current.push_back(k);
    }
    if (stop_at_end) Apply(t.Stop(), -1);
  }
};

TEST(ScheduleTrackerTest, WorkedTimelineSavesStepsFourFiveThenEightNine) {
  Simulation sim;
  sim.Run(Sched(2, 1, 1, 2, 2), 40, /*stop_at_end=*/true);
  ASSERT_EQ(sim.files.size(), 2u);
  EXPECT_EQ(sim.files[0], (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(sim.files[1], (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(sim.saved_at, (std::vector<int64_t>{6, 10}));
}

TEST(ScheduleTrackerTest, RepeatZeroKeepsSavingEveryCycleUntilStop) {
  Simulation sim;
  sim.Run(Sched(2, 1, 1, 2, 0), 19, /*stop_at_end=*/true);  // k = 0 .. 18
  EXPECT_EQ(sim.saved_at, (std::vector<int64_t>{6, 10, 14, 18}));
  ASSERT_EQ(sim.files.size(), 4u);
  EXPECT_EQ(sim.files[2], (std::vector<int64_t>{12, 13}));
  EXPECT_EQ(sim.files[3], (std::vector<int64_t>{16, 17}));
}

TEST(ScheduleTrackerTest, StopInsideRecordSavesThePartialWindow) {
  Simulation sim;
  sim.Run(Sched(2, 1, 1, 2, 2), 9, /*stop_at_end=*/true);  // loop ends at k = 8 (RECORD)
  ASSERT_EQ(sim.files.size(), 2u);
  EXPECT_EQ(sim.files[1], (std::vector<int64_t>{8}));
  EXPECT_EQ(sim.saved_at.back(), -1);  // saved by stop()
}

TEST(ScheduleTrackerTest, StopInWarmupSavesNothing) {
  Simulation sim;
  sim.Run(Sched(2, 1, 1, 2, 2), 8, /*stop_at_end=*/true);  // ends at k = 7 (WARMUP)
  ASSERT_EQ(sim.files.size(), 1u);  // only the first cycle
  ScheduleTracker t(Sched(0, 0, 2, 1, 1));
  t.Start();
  EXPECT_EQ(t.action(), A::kWarmup);
  const ScheduleEffects fx = t.Stop();
  EXPECT_FALSE(fx.Has(E::kSave));
  EXPECT_TRUE(fx.Has(E::kStart));
  EXPECT_TRUE(fx.Has(E::kStop));
}

TEST(ScheduleTrackerTest, BackToBackActiveOneWindowsSaveEveryStep) {
  Simulation sim;
  sim.Run(Sched(0, 0, 0, 1, 3), 6, /*stop_at_end=*/true);
  ASSERT_EQ(sim.files.size(), 3u);
  EXPECT_EQ(sim.files[0], (std::vector<int64_t>{0}));
  EXPECT_EQ(sim.files[1], (std::vector<int64_t>{1}));
  EXPECT_EQ(sim.files[2], (std::vector<int64_t>{2}));
}

TEST(ScheduleTrackerTest, StepBeforeStartDoesNothingAndStopResetsState) {
  ScheduleTracker t(Sched(0, 0, 0, 2, 1));
  EXPECT_TRUE(t.Step().empty());
  EXPECT_FALSE(t.started());
  t.Start();
  EXPECT_TRUE(t.recording());
  t.Stop();
  EXPECT_FALSE(t.started());
  EXPECT_FALSE(t.recording());
  EXPECT_TRUE(t.Stop().empty());
}

TEST(ScheduleTrackerTest, ExhaustedAfterTheLastCycleOnlyWhenRepeatIsFinite) {
  ScheduleTracker finite(Sched(1, 0, 0, 2, 1));
  finite.Start();
  for (int i = 0; i < 2; ++i) finite.Step();
  EXPECT_FALSE(finite.exhausted());  // k = 2 is RECORD_AND_SAVE
  finite.Step();
  EXPECT_TRUE(finite.exhausted());
  ScheduleTracker forever(Sched(1, 0, 0, 2, 0));
  forever.Start();
  for (int i = 0; i < 50; ++i) forever.Step();
  EXPECT_FALSE(forever.exhausted());
  EXPECT_TRUE(forever.MultiCycle());
  EXPECT_FALSE(finite.MultiCycle());
}

std::string Describe(const ScheduleEffects& fx) {
  std::string s;
  for (E e : fx) {
    if (!s.empty()) s += ",";
    s += ScheduleEffectName(e);
  }
  return s;
}

TEST(ScheduleTransitionTest, TransitionTableMatchesTorchActionMap) {
  struct Row {
    A from, to;
    const char* effects;
  };
  const Row rows[] = {
      {A::kNone, A::kNone, ""},
      {A::kNone, A::kWarmup, "prepare"},
      {A::kNone, A::kRecord, "prepare,start"},
      {A::kNone, A::kRecordAndSave, "prepare,start"},
      {A::kWarmup, A::kNone, "warn,start,stop"},
      {A::kWarmup, A::kWarmup, ""},
      {A::kWarmup, A::kRecord, "start"},
      {A::kWarmup, A::kRecordAndSave, "start"},
      {A::kRecord, A::kNone, "warn,stop"},
      {A::kRecord, A::kWarmup, "warn,stop"},
      {A::kRecord, A::kRecord, ""},
      {A::kRecord, A::kRecordAndSave, ""},
      {A::kRecordAndSave, A::kNone, "stop,save"},
      {A::kRecordAndSave, A::kWarmup, "stop,save,prepare"},
      {A::kRecordAndSave, A::kRecord, "stop,save,prepare,start"},
      {A::kRecordAndSave, A::kRecordAndSave, "stop,save,prepare,start"},
  };
  for (const Row& r : rows)
    EXPECT_EQ(Describe(TransitionEffects(r.from, r.to)), r.effects)
        << ScheduleActionName(r.from) << " -> " << ScheduleActionName(r.to);
}

TEST(ScheduleTransitionTest, StopTableMatchesTorchExitActions) {
  EXPECT_EQ(Describe(StopEffects(A::kNone)), "");
  EXPECT_EQ(Describe(StopEffects(A::kWarmup)), "start,stop");
  EXPECT_EQ(Describe(StopEffects(A::kRecord)), "stop,save");
  EXPECT_EQ(Describe(StopEffects(A::kRecordAndSave)), "stop,save");
}

TEST(ScheduleTransitionTest, ScheduleFunctionNeverProducesAnIncorrectTransition) {
  for (int64_t wait = 0; wait <= 2; ++wait)
    for (int64_t warmup = 0; warmup <= 2; ++warmup)
      for (int64_t active = 1; active <= 3; ++active)
        for (int64_t repeat = 0; repeat <= 2; ++repeat) {
          ScheduleTracker t(Sched(1, wait, warmup, active, repeat));
          t.Start();
          for (int k = 1; k < 40; ++k) ASSERT_FALSE(t.Step().Has(E::kWarnIncorrect));
        }
}

}  // namespace
}  // namespace rlprof::runtime
