// torch.profiler.schedule semantics for rlprof's capture windows.
//
// ActionAt() is the pure schedule function of PyTorch's `torch.profiler.schedule` (also
// `torch_npu.profiler.schedule`): for the profiler's own 0-based step counter k it returns
// NONE, WARMUP, RECORD or RECORD_AND_SAVE (docs/capture-windows.md, reference §6).
// ScheduleTracker applies torch's transition table (`profile.action_map`) as the counter
// advances, so a caller learns when tracing is prepared, started, stopped and saved.
//
//   ScheduleTracker t(plan_schedule);            // skip_first=2, wait=1, warmup=1, active=2
//   ScheduleEffects e = t.Start();               // k = 0
//   for (...) { e = t.Step(); if (e.Has(ScheduleEffect::kSave)) ... }  // k = 1, 2, ...
//   e = t.Stop();                                // partial RECORD window saved
//
// Differences from torch: none in the action sequence. `skip_first_wait` (a torch-only
// argument) is not supported because config::Schedule has no such field.
//
// Thread-safety: ActionAt is pure; a ScheduleTracker is a plain value, not synchronised.
#ifndef RLPROF_SRC_RUNTIME_SCHEDULE_H_
#define RLPROF_SRC_RUNTIME_SCHEDULE_H_

#include <array>
#include <cstdint>

#include "rlprof/config/plan.h"
#include "src/config/sampling.h"

namespace rlprof::runtime {

// torch.profiler.ProfilerAction and the schedule function live in src/config/sampling.h (the
// plan evaluates them too, to say in advance what a schedule records).
using config::ActionAt;
using config::ScheduleAction;
using config::ScheduleActionName;

// What torch's profiler does on a transition, in torch's order.
//   kPrepare: arm tracing (WARMUP begins)      kStart: recording starts
//   kStop:    recording stops                  kSave: trace ready (a file is written)
//   kWarnIncorrect: torch warns "Incorrect schedule" (only reachable with hand-made
//                   sequences; never produced by ActionAt)
enum class ScheduleEffect { kPrepare, kStart, kStop, kSave, kWarnIncorrect };
const char* ScheduleEffectName(ScheduleEffect e);

// A short ordered list of effects (at most 4 in torch's table). No allocation.
struct ScheduleEffects {
  std::array<ScheduleEffect, 4> ops{};
  int size = 0;
  void Add(ScheduleEffect e) { ops[static_cast<size_t>(size++)] = e; }
  bool Has(ScheduleEffect e) const;
  bool empty() const { return size == 0; }
  const ScheduleEffect* begin() const { return ops.data(); }
  const ScheduleEffect* end() const { return ops.data() + size; }
};

// torch's action_map for prof.step(): (from, to) -> effects.
//   NONE->WARMUP: prepare          NONE->RECORD|RECORD_AND_SAVE: prepare, start
//   WARMUP->RECORD|RECORD_AND_SAVE: start             RECORD->RECORD|RECORD_AND_SAVE: -
//   RECORD_AND_SAVE->NONE: stop, save                 RECORD_AND_SAVE->WARMUP: stop, save, prepare
//   RECORD_AND_SAVE->RECORD|RECORD_AND_SAVE: stop, save, prepare, start
//   WARMUP->NONE: warn, start, stop   RECORD->NONE: warn, stop   RECORD->WARMUP: warn, stop
//   X->X (NONE, WARMUP, RECORD): -
ScheduleEffects TransitionEffects(ScheduleAction from, ScheduleAction to);
// torch's exit table for prof.stop() (`(action, None)`):
//   WARMUP: start, stop (no file)   RECORD|RECORD_AND_SAVE: stop, save (partial window)   NONE: -
ScheduleEffects StopEffects(ScheduleAction current);

// The schedule state of one profiler instance: counter k and current action.
class ScheduleTracker {
 public:
  explicit ScheduleTracker(const config::Schedule& s) : schedule_(s) {}

  // Starts the profiler: k = 0, effects of NONE -> ActionAt(0). Restarts a stopped tracker.
  ScheduleEffects Start();
  // prof.step(): k += 1, effects of the transition. No effect unless started.
  ScheduleEffects Step();
  // prof.stop(): exit effects of the current action; the tracker is stopped afterwards.
  ScheduleEffects Stop();

  bool started() const { return started_; }
  int64_t k() const { return k_; }
  ScheduleAction action() const { return action_; }
  // True in RECORD and RECORD_AND_SAVE while started (rlprof records nothing in WARMUP).
  bool recording() const;
  // True once no later step can record again (repeat > 0 and every cycle has passed).
  bool exhausted() const;
  // Whether this schedule can produce more than one saved cycle (repeat != 1).
  bool MultiCycle() const { return schedule_.repeat != 1; }
  const config::Schedule& schedule() const { return schedule_; }

 private:
  config::Schedule schedule_;
  bool started_ = false;
  int64_t k_ = 0;
  ScheduleAction action_ = ScheduleAction::kNone;
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_SCHEDULE_H_
