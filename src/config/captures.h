// What a Plan will write: every capture (per worker, step window and scope) with its ranks,
// contents, output directory pattern and an estimated size from a documented model
// (docs/config.md, "Size estimates"). Used by `rlprof plan`.
//
//   auto rows = EnumerateCaptures(plan, {.world_size = 8, .total_steps = 10});
//
// Thread-safety: pure function.
#ifndef RLPROF_SRC_CONFIG_CAPTURES_H_
#define RLPROF_SRC_CONFIG_CAPTURES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rlprof/config/plan.h"
#include "src/config/loader.h"
#include "src/config/sampling.h"

namespace rlprof::config {

struct EstimateModel {
  double step_seconds = 60.0;  // assumed wall time of one RL step
  // Sub-steps one stage call runs, per unit (`rlprof plan --sub-steps decode=128,micro_batch=8`);
  // a unit not given is unknown: schedules are listed cycle by cycle.
  std::map<SubStepKind, int64_t> sub_steps;
};

struct CaptureRow {
  std::string worker;               // actor_rollout_ref | critic | reward_model | <role> | all workers
  std::vector<std::string> roles;   // roles whose blocks selected these ranks
  std::string steps;                // "2", "1-2" (continuous run), "all"
  int64_t windows = 1;              // step windows this row stands for
  std::string scope;                // e2e | steps<A>-<B> | <stage>
  std::string ranks;                // "0", "0-7", "all"
  int64_t rank_count = 0;           // -1 when unknown (all ranks, no --world-size)
  CaptureMode mode = CaptureMode::kEndToEnd;
  Contents contents;
  std::string level;
  Schedule schedule;                 // the schedule this capture's stage (or step window) follows
  std::string schedule_from;        // its block ("" = none: the whole stage or step)
  std::string token_window;         // "[30, 60)" or ""
  // Scheduled captures: the sub-steps [sub_first, sub_first + sub_count) of the stage call it
  // holds (one capture per active period); sub_complete false = cut by the stage end.
  bool sampled = false;
  int64_t sub_first = 0, sub_count = 0;
  bool sub_complete = true;
  std::string sub_steps;            // "micro_batch 0", "decode 30-69", "" when not sampled
  std::string directory;            // pattern
  uint64_t events_per_capture = 0;
  uint64_t bytes_per_capture = 0;
  int64_t captures = 0;             // windows × ranks (-1 unknown)
};

// What one stage (or step window) of a worker records: the schedule that applies and the
// sub-step indices it keeps for the assumed count.
struct SamplingRow {
  std::string worker, ranks, stage;  // stage "" = the end-to-end step window
  Schedule schedule;                 // disabled = whole stage
  std::string from;                  // block path of the schedule ("" = none)
  bool token_window = false;
  int64_t count = -1;                // sub-steps per call assumed (-1 unknown)
  std::vector<SamplePeriod> periods;
  bool more = false;                 // more periods follow (repeat 0 or a long list)
  uint64_t bytes_whole = 0;          // estimated size of the whole stage call
  uint64_t bytes_sampled = 0;        // estimated size of what the schedule records, per call
};

// tool nsys: the capture ranges one profiled process of a worker gives nsys (rlprof calls
// cudaProfilerStart/Stop at each of its windows), hence its exact --capture-range-end.
struct NsysRanges {
  std::string worker, ranks;
  CaptureMode mode = CaptureMode::kEndToEnd;
  bool continuous = false;
  int64_t ranges = 0;                 // per process; -1 unknown (steps: all without --total-steps)
  int64_t verl_default = 0;           // verl's guess: 6 × len(steps)
  std::vector<std::string> excluded;  // scopes that run in other processes (Agent-Loop rollout)
  std::string CaptureRangeEnd(bool shutdown) const;  // "repeat-shutdown:N" / "repeat:N"
  std::string Command() const;                       // the nsys profile line
};

struct CaptureSummary {
  std::vector<CaptureRow> rows;
  std::vector<SamplingRow> sampling;
  std::vector<std::string> warnings;  // schedules that cannot apply, with the reason
  int64_t total_captures = 0;  // -1 when unknown
  uint64_t total_bytes = 0;
  std::vector<std::string> notes;  // e.g. replica mapping
  std::vector<NsysRanges> nsys;    // tool nsys only
};

CaptureSummary EnumerateCaptures(const Plan& plan, const LoadOptions& options,
                                 const EstimateModel& model = {});
nlohmann::ordered_json CaptureSummaryToJson(const CaptureSummary& s);
// Events per second of one rank for these contents (the documented model).
double EventsPerSecond(Tool tool, const Contents& c, const std::string& level,
                       double ops_sampling = 1.0);
uint64_t BytesPerEvent(const Contents& c, const std::vector<ExportFormat>& exports);
std::string RankListToString(const std::vector<int64_t>& ranks);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_CAPTURES_H_
