#include "src/runtime/capture_controller.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "src/config/stages.h"

namespace rlprof::runtime {

namespace {

using config::CaptureMode;
using config::StepSelection;
using config::SubStepKind;

// Deeper stage nesting than this is counted, not stored (a runaway caller cannot grow memory).
constexpr size_t kMaxStageDepth = 1024;

// backstop_s in ns; <= 0 or NaN disables it, absurdly large values saturate.
int64_t BackstopNs(double seconds) {
  const double ns = seconds * 1e9;
  if (!(ns > 0)) return 0;
  if (ns >= 9.0e18) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(ns);
}

std::string JoinSteps(const std::vector<int64_t>& steps) {
  std::string s = "[";
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(steps[i]);
  }
  return s + "]";
}

}  // namespace

const char* CloseReasonName(CloseReason r) {
  switch (r) {
    case CloseReason::kStepEnd: return "step_end";
    case CloseReason::kStageEnd: return "stage_end";
    case CloseReason::kSchedule: return "schedule";
    case CloseReason::kBackstop: return "backstop";
    case CloseReason::kBudget: return "budget";
    case CloseReason::kShutdown: return "shutdown";
    case CloseReason::kError: return "error";
  }
  return "?";
}

const char* WindowActionTypeName(WindowAction::Type t) {
  switch (t) {
    case WindowAction::Type::kOpen: return "open";
    case WindowAction::Type::kClose: return "close";
    case WindowAction::Type::kRecordOn: return "record_on";
    case WindowAction::Type::kRecordOff: return "record_off";
  }
  return "?";
}

std::string WindowAction::ToString() const {
  std::string s = WindowActionTypeName(type);
  s += " " + scope + " steps=" + JoinSteps(steps);
  if (!role.empty()) s += " role=" + role;
  if (!stage.empty()) s += " stage=" + stage;
  if (type == Type::kClose) s += std::string(" reason=") + CloseReasonName(reason);
  if (type == Type::kClose && schedule) {
    s += std::string(" ") + config::SubStepKindName(schedule->unit) + "=[" +
         std::to_string(sub_first) + ", " + std::to_string(sub_first + sub_count) + ")";
    if (!period_complete) s += " cut";
  }
  return s;
}

CaptureController::CaptureController(const config::Plan& plan, const config::ProcessPlan& proc)
    : enabled_(proc.enabled && plan.steps.kind != StepSelection::Kind::kNone),
      mode_(proc.mode),
      steps_(plan.steps),
      continuous_(plan.continuous_steps && proc.mode == CaptureMode::kEndToEnd),
      backstop_ns_(BackstopNs(plan.backstop_s)),
      proc_(proc) {}

std::optional<int64_t> CaptureController::current_step() const {
  if (!has_step_) return std::nullopt;
  return step_;
}

const ScheduleTracker* CaptureController::tracker() const {
  return host_.open && host_.tracker ? &*host_.tracker : nullptr;
}

// The scope of a continuous run starting at `first`: "e2e" for a run of one step,
// "steps<A>-<B>" for the planned run A..B, "steps<A>-end" when the selection is unbounded.
bool CaptureController::Forced(int64_t step) const {
  return step >= forced_first_ && step <= forced_last_ && !steps_.Contains(step);
}

bool CaptureController::Selected(int64_t step) const {
  return steps_.Contains(step) || (step >= forced_first_ && step <= forced_last_);
}

bool CaptureController::Trigger(int64_t steps, int64_t decode_steps) {
  if (!active() || trigger_pending() || (has_step_ && forced_last_ >= step_ && forced_first_ <= forced_last_ &&
                                         (step_active_ || forced_last_ > step_)))
    return false;
  if ((steps > 0) == (decode_steps > 0)) return false;
  trigger_steps_ = steps;
  trigger_decode_ = decode_steps;
  return true;
}

std::string CaptureController::RunScope(int64_t first) const {
  if (!continuous_) return "e2e";
  if (Forced(first)) {
    const int64_t last = std::max(first, forced_last_);
    return last == first ? "e2e" : "steps" + std::to_string(first) + "-" + std::to_string(last);
  }
  std::optional<int64_t> last;
  switch (steps_.kind) {
    case StepSelection::Kind::kNone: last = first; break;
    case StepSelection::Kind::kAll: break;
    case StepSelection::Kind::kRange: last = std::max(first, steps_.end - 1); break;
    case StepSelection::Kind::kList: {
      int64_t b = first;
      auto it = std::lower_bound(steps_.list.begin(), steps_.list.end(), first);
      if (it != steps_.list.end() && *it == first) {
        for (++it; it != steps_.list.end() && *it == b + 1; ++it) ++b;
      }
      last = b;
      break;
    }
  }
  if (last && *last == first) return "e2e";
  return "steps" + std::to_string(first) + "-" + (last ? std::to_string(*last) : "end");
}

void CaptureController::OpenCapture(int64_t first_step, int64_t now_ns,
                                    std::vector<WindowAction>& out) {
  const bool parts = host_.tracker && host_.tracker->MultiCycle();
  ++host_.parts;
  capture_.open = true;
  capture_.part = parts ? host_.parts : 0;
  capture_.scope = parts ? host_.scope + ".part" + std::to_string(host_.parts) : host_.scope;
  capture_.steps.assign(1, first_step);
  capture_.open_ns = now_ns;
  capture_.sub_first = host_.tracker ? host_.tracker->k() : 0;
  WindowAction a;
  a.type = WindowAction::Type::kOpen;
  a.scope = capture_.scope;
  a.steps = capture_.steps;
  a.role = host_.role;
  a.stage = host_.stage;
  a.part = capture_.part;
  a.triggered = host_.triggered;
  out.push_back(a);
  a.type = WindowAction::Type::kRecordOn;
  out.push_back(std::move(a));
}

void CaptureController::CloseCapture(CloseReason reason, std::vector<WindowAction>& out) {
  if (!capture_.open) return;
  WindowAction a;
  a.type = WindowAction::Type::kRecordOff;
  a.scope = capture_.scope;
  a.steps = capture_.steps;
  a.role = host_.role;
  a.stage = host_.stage;
  a.part = capture_.part;
  a.reason = reason;
  if (host_.tracker && host_.schedule != nullptr) {
    a.schedule = host_.schedule->schedule;
    a.schedule_from = host_.schedule->block + (host_.schedule->token_window ? " (token window)" : "");
    a.sub_first = capture_.sub_first;
    // k = the sub-step in progress. It never ran when a stage ends (sub-steps are counted as
    // they finish), but a step in progress did when its step window ends.
    const bool step_unit = host_.schedule->schedule.unit == SubStepKind::kStep;
    a.sub_count = host_.tracker->k() - capture_.sub_first +
                  (step_unit && reason != CloseReason::kSchedule ? 1 : 0);
    a.period_complete = reason == CloseReason::kSchedule;
  }
  out.push_back(a);
  a.type = WindowAction::Type::kClose;
  out.push_back(std::move(a));
  capture_ = Capture{};
}

void CaptureController::OpenHost(std::string scope, std::string role, std::string stage,
                                 const config::StageSchedule* schedule, int64_t now_ns,
                                 std::vector<WindowAction>& out) {
  host_ = Host{};
  host_.open = true;
  host_.scope = std::move(scope);
  host_.role = std::move(role);
  host_.stage = std::move(stage);
  host_.steps.assign(1, step_);
  host_.open_ns = now_ns;
  host_.triggered = Forced(step_);
  if (schedule == nullptr || !schedule->schedule.enabled()) {
    OpenCapture(step_, now_ns, out);
    return;
  }
  host_.schedule = schedule;
  host_.tracker.emplace(schedule->schedule);
  host_.tracker->Start();
  if (host_.tracker->recording()) OpenCapture(step_, now_ns, out);
}

// Applies one prof.step() of the host window's tracker: a saved cycle closes its capture
// (reason kSchedule); a cycle that starts recording opens the next part, which begins in
// step `first_step`.
void CaptureController::AdvanceTracker(int64_t first_step, int64_t now_ns,
                                       std::vector<WindowAction>& out) {
  ScheduleTracker& t = *host_.tracker;
  const bool before = t.recording();
  const ScheduleEffects fx = t.Step();
  const bool after = t.recording();
  if (fx.Has(ScheduleEffect::kSave) || (before && !after)) CloseCapture(CloseReason::kSchedule, out);
  if (after && !capture_.open) OpenCapture(first_step, now_ns, out);
}

void CaptureController::CloseHost(CloseReason reason, int64_t now_ns,
                                  std::vector<WindowAction>& out) {
  if (!host_.open) return;
  // A tracker's stop() saves a partial RECORD cycle and nothing in WARMUP or NONE; in both
  // cases that is exactly "close the capture if one is open" (before Stop resets k).
  CloseCapture(reason, out);
  if (host_.tracker) host_.tracker->Stop();
  host_ = Host{};
  for (StageFrame& f : stack_) f.owns_window = false;
}

std::vector<WindowAction> CaptureController::EndStep(int64_t now_ns) {
  std::vector<WindowAction> out;
  if (!step_active_) return out;
  step_active_ = false;
  if (!host_.open) return out;
  // The run goes on: the window stays open (a step-unit schedule advances when the next
  // step begins, so a capture it opens never names a step that did not run).
  if (mode_ == CaptureMode::kEndToEnd && continuous_ && Selected(step_ + 1) && !(forced_decode_ && Forced(step_))) return out;
  CloseHost(CloseReason::kStepEnd, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnStepBegin(int64_t step, int64_t now_ns) {
  if (!active()) return {};
  std::vector<WindowAction> out = EndStep(now_ns);
  if (trigger_pending()) {  // `rlprof trigger`: this step is the first of the forced window
    forced_first_ = step;
    forced_last_ = step + std::max<int64_t>(trigger_steps_, 1) - 1;
    forced_decode_ = trigger_decode_ > 0;
    if (forced_decode_) {
      forced_schedule_ = config::StageSchedule{};
      forced_schedule_.role = "*";
      forced_schedule_.block = "rlprof trigger";
      forced_schedule_.schedule.active = trigger_decode_;
      forced_schedule_.schedule.repeat = 1;
      forced_schedule_.schedule.unit = SubStepKind::kDecode;
      forced_schedule_.token_window = true;
    }
    trigger_steps_ = trigger_decode_ = 0;
  }
  // A continuous window only survives into the step that directly follows its last step.
  if (host_.open && !(continuous_ && step == step_ + 1 && Selected(step) && !Forced(step) == !Forced(step_)))
    CloseHost(CloseReason::kStepEnd, now_ns, out);
  step_ = step;
  has_step_ = true;
  step_active_ = true;
  if (mode_ != CaptureMode::kEndToEnd || !Selected(step)) return out;
  if (Forced(step) && forced_decode_) {
    if (!host_.open) OpenHost("e2e", "", "", &forced_schedule_, now_ns, out);
    return out;
  }
  if (host_.open) {  // continuing run
    host_.steps.push_back(step);
    if (host_.tracker && host_.tracker->schedule().unit == SubStepKind::kStep)
      AdvanceTracker(step, now_ns, out);
    if (capture_.open && capture_.steps.back() != step) capture_.steps.push_back(step);
    return out;
  }
  OpenHost(RunScope(step), "", "", proc_.StepSchedule(), now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnStepEnd(int64_t now_ns) {
  if (!active()) return {};
  return EndStep(now_ns);
}

std::vector<WindowAction> CaptureController::OnStageBegin(std::string_view role,
                                                          std::string_view stage, int64_t now_ns,
                                                          std::optional<SubStepKind> counts) {
  if (!active()) return {};
  std::vector<WindowAction> out;
  if (stack_.size() >= kMaxStageDepth) {
    ++overflow_frames_;
    return out;
  }
  (void)counts;  // schedules attach by stage (proc_.ScheduleFor), not by declaration
  stack_.push_back(StageFrame{std::string(role), std::string(stage), false});
  if (mode_ != CaptureMode::kDiscrete || !step_active_ || host_.open || !Selected(step_))
    return out;
  if (!proc_.StageSelected(stage)) return out;
  std::string name = config::CanonicalStage(stage);
  const bool decode = Forced(step_) && forced_decode_;
  if (decode && name != "rollout_generate") return out;  // a decode trigger samples the rollout only
  stack_.back().owns_window = true;
  OpenHost(name, stack_.back().role, name, decode ? &forced_schedule_ : proc_.ScheduleFor(role, stage), now_ns,
           out);
  return out;
}

std::vector<WindowAction> CaptureController::OnStageEnd(int64_t now_ns) {
  if (!active()) return {};
  std::vector<WindowAction> out;
  if (overflow_frames_ > 0) {
    --overflow_frames_;
    return out;
  }
  if (stack_.empty()) return out;  // unmatched end: tolerated
  const bool owns = stack_.back().owns_window;
  stack_.pop_back();
  if (owns) CloseHost(CloseReason::kStageEnd, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnSubStep(SubStepKind kind, int64_t now_ns) {
  if (!active() || !host_.open || !host_.tracker || kind == SubStepKind::kStep ||
      host_.tracker->schedule().unit != kind)
    return {};
  std::vector<WindowAction> out;
  AdvanceTracker(step_, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnTick(int64_t now_ns) {
  if (!active() || !capture_.open || !host_.tracker || backstop_ns_ <= 0 ||
      now_ns - capture_.open_ns <= backstop_ns_)
    return {};
  std::vector<WindowAction> out;
  CloseHost(CloseReason::kBackstop, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnBudgetExceeded(int64_t now_ns) {
  if (!active() || !capture_.open) return {};
  std::vector<WindowAction> out;
  CloseHost(CloseReason::kBudget, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnError(int64_t now_ns) {
  if (!active() || !host_.open) return {};
  std::vector<WindowAction> out;
  CloseHost(CloseReason::kError, now_ns, out);
  return out;
}

std::vector<WindowAction> CaptureController::OnStop(int64_t now_ns) {
  if (!active()) return {};
  std::vector<WindowAction> out;
  CloseHost(CloseReason::kShutdown, now_ns, out);
  stopped_ = true;
  step_active_ = false;
  stack_.clear();
  overflow_frames_ = 0;
  return out;
}

}  // namespace rlprof::runtime
