#include "src/runtime/schedule.h"

#include <algorithm>
#include <limits>

#include "src/base/time_math.h"

namespace rlprof::runtime {

const char* ScheduleEffectName(ScheduleEffect e) {
  switch (e) {
    case ScheduleEffect::kPrepare: return "prepare";
    case ScheduleEffect::kStart: return "start";
    case ScheduleEffect::kStop: return "stop";
    case ScheduleEffect::kSave: return "save";
    case ScheduleEffect::kWarnIncorrect: return "warn";
  }
  return "?";
}

namespace {
// wait + warmup + active (each ≥ 0), saturated: absurd configs must not overflow.
int64_t CycleLength(int64_t wait, int64_t warmup, int64_t active) {
  return base::SatAdd(base::SatAdd(wait, warmup), active);
}
}  // namespace

bool ScheduleEffects::Has(ScheduleEffect e) const {
  return std::find(begin(), end(), e) != end();
}

namespace {
bool IsRecord(ScheduleAction a) {
  return a == ScheduleAction::kRecord || a == ScheduleAction::kRecordAndSave;
}
}  // namespace

ScheduleEffects TransitionEffects(ScheduleAction from, ScheduleAction to) {
  using A = ScheduleAction;
  using E = ScheduleEffect;
  ScheduleEffects fx;
  switch (from) {
    case A::kNone:
      if (to == A::kWarmup) {
        fx.Add(E::kPrepare);
      } else if (IsRecord(to)) {
        fx.Add(E::kPrepare);
        fx.Add(E::kStart);
      }
      break;
    case A::kWarmup:
      if (to == A::kNone) {
        fx.Add(E::kWarnIncorrect);
        fx.Add(E::kStart);
        fx.Add(E::kStop);
      } else if (IsRecord(to)) {
        fx.Add(E::kStart);
      }
      break;
    case A::kRecord:
      if (to == A::kNone || to == A::kWarmup) {
        fx.Add(E::kWarnIncorrect);
        fx.Add(E::kStop);
      }
      break;
    case A::kRecordAndSave:
      fx.Add(E::kStop);
      fx.Add(E::kSave);
      if (to == A::kWarmup) {
        fx.Add(E::kPrepare);
      } else if (IsRecord(to)) {
        fx.Add(E::kPrepare);
        fx.Add(E::kStart);
      }
      break;
  }
  return fx;
}

ScheduleEffects StopEffects(ScheduleAction current) {
  ScheduleEffects fx;
  if (current == ScheduleAction::kWarmup) {
    fx.Add(ScheduleEffect::kStart);
    fx.Add(ScheduleEffect::kStop);
  } else if (IsRecord(current)) {
    fx.Add(ScheduleEffect::kStop);
    fx.Add(ScheduleEffect::kSave);
  }
  return fx;
}

ScheduleEffects ScheduleTracker::Start() {
  started_ = true;
  k_ = 0;
  action_ = ActionAt(schedule_, 0);
  return TransitionEffects(ScheduleAction::kNone, action_);
}

ScheduleEffects ScheduleTracker::Step() {
  if (!started_) return {};
  const ScheduleAction prev = action_;
  ++k_;
  action_ = ActionAt(schedule_, k_);
  return TransitionEffects(prev, action_);
}

ScheduleEffects ScheduleTracker::Stop() {
  if (!started_) return {};
  ScheduleEffects fx = StopEffects(action_);
  started_ = false;
  action_ = ScheduleAction::kNone;
  return fx;
}

bool ScheduleTracker::recording() const { return started_ && IsRecord(action_); }

bool ScheduleTracker::exhausted() const {
  if (!schedule_.enabled() || schedule_.repeat <= 0) return false;
  const int64_t len = CycleLength(std::max<int64_t>(schedule_.wait, 0),
                                  std::max<int64_t>(schedule_.warmup, 0), schedule_.active);
  const int64_t kp = k_ - std::max<int64_t>(schedule_.skip_first, 0);
  return kp >= 0 && kp / len >= schedule_.repeat;
}

}  // namespace rlprof::runtime
