// What a schedule records: torch.profiler.schedule's action function, and the active periods
// it yields in a stage call that runs a given number of sub-steps. The runtime's
// ScheduleTracker (src/runtime/schedule.h) applies the same function step by step; the plan
// (`rlprof plan --sub-steps decode=128`) uses SchedulePeriods to say in advance which sub-step
// indices each capture will hold. The two are tested against each other and against torch.
//
//   auto periods = SchedulePeriods(schedule, /*count=*/8, &more);
//   // skip_first=1 wait=1 warmup=1 active=2 repeat=2 over 8 micro-batches:
//   //   {first 3, size 2, complete}, {first 7, size 1, cut by the stage end}
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_CONFIG_SAMPLING_H_
#define RLPROF_SRC_CONFIG_SAMPLING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rlprof/config/plan.h"

namespace rlprof::config {

// torch.profiler.ProfilerAction.
enum class ScheduleAction { kNone, kWarmup, kRecord, kRecordAndSave };
const char* ScheduleActionName(ScheduleAction a);  // "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"

// The action of step k (k >= 0; negative k is treated as 0). A disabled schedule
// (active <= 0) records every step (kRecord), the behaviour of a profiler without schedule.
// Negative skip_first/wait/warmup/repeat are treated as 0 (config validation rejects them).
//   k < skip_first                    => NONE
//   k' = k - skip_first, L = wait + warmup + active
//   repeat > 0 and k' / L >= repeat   => NONE   (real division; equals k' >= repeat * L)
//   m = k' mod L: m < wait => NONE; m < wait + warmup => WARMUP;
//                 m < L - 1 => RECORD; m == L - 1 => RECORD_AND_SAVE
ScheduleAction ActionAt(const Schedule& s, int64_t k);

// One active period: the capture that records sub-steps [first, first + size) of a stage call
// (k counts the sub-steps of the schedule's unit since the stage began, from 0). complete:
// the period ended at RECORD_AND_SAVE; false when the stage ended inside it (the capture is
// flushed with reason stage_end). size 0: the period began after the last sub-step (the
// capture holds the stage's tail only).
struct SamplePeriod {
  int64_t first = 0;
  int64_t size = 0;
  bool complete = true;
};

// The periods of a stage call that runs `count` sub-steps. count < 0 = unknown: every cycle
// as if the stage ran long enough; with repeat 0 only the first cycle, and *more = true
// (cycles continue until the stage ends). At most `limit` periods are listed (*more = true
// past it). A disabled schedule yields nothing.
std::vector<SamplePeriod> SchedulePeriods(const Schedule& s, int64_t count, bool* more,
                                          size_t limit = 64);
// "micro_batch 0", "decode 30-69", "mini_batch 3 (cut)", "decode tail after 127".
std::string PeriodText(SubStepKind unit, const SamplePeriod& p);
// "skip 30 active 40 repeat 1" style summary of a schedule's parameters.
std::string ScheduleParamsText(const Schedule& s);

// A token window [start, end) on decode iterations as a schedule (skip_first = start,
// active = end - start, repeat = 1; no end = active until the stage ends).
Schedule TokenWindowSchedule(std::optional<int64_t> start, std::optional<int64_t> end);
// The `active` of a token window without end.
constexpr int64_t kUnboundedActive = int64_t{1} << 60;

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_SAMPLING_H_
