// CaptureController: the capture-window state machine of one profiled process.
//
// It turns the training loop's events (step begin/end, stage begin/end, sub-steps such as
// mini-batches or decode iterations, a periodic tick, budget and stop) into window actions:
// open a capture, start/stop recording, close a capture with a reason. It is pure and
// deterministic: no threads, no I/O, time is injected (`now_ns`, CLOCK_MONOTONIC ns).
// The Session applies the actions (buffers, capture directory, manifest); see
// docs/capture-windows.md for the full event x state table and worked examples.
//
//   config::ProcessPlan proc = config::ResolveForProcess(plan, {"actor"}, rank);
//   CaptureController ctl(plan, proc);
//   for (const WindowAction& a : ctl.OnStepBegin(2, now)) session.Apply(a);
//   ... ctl.OnStageBegin("actor", "actor_update", now, config::SubStepKind::kMiniBatch);
//   ... ctl.OnSubStep(config::SubStepKind::kMiniBatch, now);   // after each mini-batch
//   ... ctl.OnStageEnd(now); ctl.OnStepEnd(now); ...  ctl.OnStop(now);
//
// Action protocol (what a Session can rely on):
//   * A capture is bracketed by  kOpen, kRecordOn  ...  kRecordOff, kClose  (always in this
//     order, always both pairs). At most one capture is open at a time; captures never nest.
//     kRecordOn/kRecordOff are separate so a Session can set the capture up (directory,
//     manifest header) before it flips the hot-path flag; today recording is on for the
//     whole life of a capture (rlprof's buffers are pre-faulted at session start, so a
//     schedule's WARMUP phase has nothing to warm and records nothing, as in torch).
//   * kOpen carries scope, role, stage, part and steps = {the step it opens in}. The capture
//     directory is step<steps[0]>/<scope>/. kClose repeats scope/role/stage/part and carries
//     the full list of steps the capture covered (use that one for the manifest) and reason.
//   * Scopes: "e2e" (one step), "steps<A>-<B>" (a continuous run of consecutive selected
//     steps A..B as planned when it opens; "steps<A>-end" if the selection is unbounded),
//     "<stage>" (discrete), and "<scope>.part<k>" (k = 1, 2, ...) for the k-th active cycle
//     of a schedule that can produce more than one cycle (repeat != 1).
//
// Windows:
//   * The "host window" is the logical window: the step window (end-to-end mode; one per
//     selected step, or one per continuous run) or the stage window (discrete mode; one per
//     annotated stage call that passes the stage allow-list, inside a selected step; stage
//     calls nested inside an open stage window open nothing). Without a schedule, the host
//     window is one capture. With a schedule the host window owns a ScheduleTracker started
//     when it opens (k = 0) and each active cycle is its own capture.
//   * Which tracker a host window gets (proc.ScheduleFor / StepSchedule, src/config): an
//     end-to-end window follows the process's first role-wide schedule, else its first token
//     window. A discrete stage window follows the schedule that names its stage (aliases
//     included), else a role-wide schedule of the stage's role whose unit the stage runs
//     (token windows first): any number of schedules per process, each on its own stages. No
//     declaration at the annotation is needed (`counts` is accepted and ignored). Stages no
//     schedule applies to are captured in full. A token window [start, end) on decode
//     iterations is the schedule skip_first = start, active = end - start (unbounded
//     without end), repeat = 1.
//   * Stage names go through the stage vocabulary (src/config/stages.h): the allow-list
//     matches aliases and a stage window's scope and stage are the canonical name
//     (`actor_generate` is captured as `rollout_generate`).
//   * What a scheduled capture holds: one capture per active period; its kClose carries the
//     schedule and the sub-steps [sub_first, sub_first + sub_count) it held, k counted from 0
//     at the window's start, and whether the period ended at RECORD_AND_SAVE (complete) or was
//     cut short (the stage ended inside it, backstop, budget, ...). WARMUP is never recorded.
//   * Sub-step semantics: OnSubStep(kind) means "one unit of `kind` finished" (torch's
//     prof.step()). Units of kStep advance when the next step of a continuous run begins
//     (k = steps of the run finished so far, as torch's step() at the end of an iteration;
//     a capture opened then starts with that step); OnSubStep(kStep) is ignored. In a
//     one-step window a kStep schedule only ever sees k = 0.
//   * Backstop: OnTick closes a capture of a scheduled window that has been open longer than
//     plan.backstop_s (reason kBackstop), so a rank that stops calling OnSubStep still
//     closes. Unscheduled windows are never cut by time (RL steps of many minutes are
//     normal); backstop_s <= 0 disables it.
//   * Early ends: kBackstop, kBudget and kError end the whole host window: the rest of that
//     step (end-to-end) or stage call (discrete) opens nothing more; the next selected step
//     or stage call opens a new one.
//   * Tolerance: OnStepBegin while a step is active ends it first (MindSpeed-RL only knows
//     iteration starts); OnStepEnd without a step, OnStageEnd without a stage, events after
//     OnStop are ignored (no crash, no window). Stage calls outside a step open nothing.
//     OnStop closes everything (reason kShutdown) and makes the controller inert.
//   * A disabled process (proc.enabled == false) or an empty step selection never opens
//     anything; every call returns an empty vector without allocating.
//
// Thread-safety: none; the Session serialises calls (they are rare: steps, stages, ticks).
#ifndef RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_H_
#define RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"
#include "src/runtime/schedule.h"

namespace rlprof::runtime {

enum class CloseReason { kStepEnd, kStageEnd, kSchedule, kBackstop, kBudget, kShutdown, kError };
// The manifest's close_reason: "step_end", "stage_end", "schedule", "backstop", "budget",
// "shutdown", "error".
const char* CloseReasonName(CloseReason r);

struct WindowAction {
  enum class Type { kOpen, kClose, kRecordOn, kRecordOff };
  Type type = Type::kOpen;
  std::string scope;           // "e2e", "steps2-3", "<stage>", "<scope>.part<k>"
  std::vector<int64_t> steps;  // kOpen: {opening step}; kClose: every step covered
  std::string role, stage;     // discrete windows (empty for end-to-end)
  int part = 0;                // k of "<scope>.part<k>"; 0 when the capture is not a part
  CloseReason reason = CloseReason::kShutdown;  // meaningful for kClose only
  // Scheduled captures (kRecordOff/kClose): the schedule followed, where it came from, and the
  // sub-steps of its unit the capture held. Unset for whole-window captures.
  std::optional<config::Schedule> schedule;
  std::string schedule_from;
  int64_t sub_first = 0;
  int64_t sub_count = 0;
  bool period_complete = false;
  bool triggered = false;  // kOpen: the window was opened by Trigger(), not by the config

  // "open e2e steps=[2]", "close actor_update.part1 steps=[2] reason=schedule", ...
  std::string ToString() const;
};
const char* WindowActionTypeName(WindowAction::Type t);  // "open", "close", "record_on", "record_off"

class CaptureController {
 public:
  // Copies what it needs; plan and proc need not outlive the controller. Not copyable (it
  // keeps indices into its own copy of proc).
  CaptureController(const config::Plan& plan, const config::ProcessPlan& proc);

  std::vector<WindowAction> OnStepBegin(int64_t step, int64_t now_ns);
  std::vector<WindowAction> OnStepEnd(int64_t now_ns);
  // Stages may nest; the controller keeps a stack. `counts`: see "Which tracker" above.
  std::vector<WindowAction> OnStageBegin(std::string_view role, std::string_view stage,
                                         int64_t now_ns,
                                         std::optional<config::SubStepKind> counts = std::nullopt);
  std::vector<WindowAction> OnStageEnd(int64_t now_ns);
  std::vector<WindowAction> OnSubStep(config::SubStepKind kind, int64_t now_ns);
  std::vector<WindowAction> OnTick(int64_t now_ns);  // time-based backstop
  std::vector<WindowAction> OnBudgetExceeded(int64_t now_ns);
  std::vector<WindowAction> OnError(int64_t now_ns);  // the Session failed: close, reason kError
  std::vector<WindowAction> OnStop(int64_t now_ns);   // closes everything, flushes partial cycles
  // On-demand capture (`rlprof trigger`, src/runtime/trigger.h): the next `steps` steps are
  // captured as if the config had selected them (in the config's mode: one e2e window per
  // step, a continuous run, or the step's stage windows); or, with `decode_steps`, the next
  // step captures `decode_steps` decode iterations (a token window [0, N): end-to-end, the
  // step window; discrete, its rollout_generate stage). Takes effect at the next OnStepBegin;
  // steps the config selects anyway keep the config's windows. False (ignored) when the
  // controller is inert, or a triggered window is still pending or running.
  bool Trigger(int64_t steps, int64_t decode_steps);
  bool trigger_pending() const { return trigger_steps_ > 0 || trigger_decode_ > 0; }

  bool window_open() const { return capture_.open; }  // a capture is open
  bool recording() const { return capture_.open; }    // recording is on (see protocol)
  bool host_window_open() const { return host_.open; }
  bool stopped() const { return stopped_; }
  std::optional<int64_t> current_step() const;
  size_t stage_depth() const { return stack_.size() + overflow_frames_; }
  // The scope of the open capture ("" when none).
  const std::string& open_scope() const { return capture_.scope; }
  // The schedule counter of the open host window (nullptr when it has no schedule).
  const ScheduleTracker* tracker() const;

  CaptureController(const CaptureController&) = delete;
  CaptureController& operator=(const CaptureController&) = delete;

 private:
  struct StageFrame {
    std::string role, stage;
    bool owns_window = false;
  };
  struct Host {
    bool open = false;
    std::string scope, role, stage;
    std::vector<int64_t> steps;
    int64_t open_ns = 0;
    std::optional<ScheduleTracker> tracker;
    const config::StageSchedule* schedule = nullptr;  // into proc_.schedules
    int parts = 0;
    bool triggered = false;  // opened by Trigger()
  };
  struct Capture {
    bool open = false;
    std::string scope;
    std::vector<int64_t> steps;
    int64_t open_ns = 0;
    int part = 0;
    int64_t sub_first = 0;  // tracker k when it opened
  };

  bool active() const { return enabled_ && !stopped_; }
  std::vector<WindowAction> EndStep(int64_t now_ns);
  void OpenHost(std::string scope, std::string role, std::string stage,
                const config::StageSchedule* schedule, int64_t now_ns,
                std::vector<WindowAction>& out);
  void CloseHost(CloseReason reason, int64_t now_ns, std::vector<WindowAction>& out);
  void OpenCapture(int64_t first_step, int64_t now_ns, std::vector<WindowAction>& out);
  void CloseCapture(CloseReason reason, std::vector<WindowAction>& out);
  void AdvanceTracker(int64_t first_step, int64_t now_ns, std::vector<WindowAction>& out);
  std::string RunScope(int64_t first_step) const;
  bool Selected(int64_t step) const;  // by the config, or by a trigger
  bool Forced(int64_t step) const;    // by a trigger only

  // From the plans.
  bool enabled_ = false;
  config::CaptureMode mode_ = config::CaptureMode::kEndToEnd;
  config::StepSelection steps_;
  bool continuous_ = false;
  int64_t backstop_ns_ = 0;
  config::ProcessPlan proc_;  // stage allow-list and schedules

  // State.
  bool stopped_ = false;
  bool step_active_ = false;
  bool has_step_ = false;
  int64_t step_ = 0;
  std::vector<StageFrame> stack_;
  size_t overflow_frames_ = 0;
  Host host_;
  Capture capture_;
  // Trigger (`rlprof trigger`): asked for, then the steps it forces.
  int64_t trigger_steps_ = 0, trigger_decode_ = 0;
  int64_t forced_first_ = 1, forced_last_ = 0;  // empty range when none
  config::StageSchedule forced_schedule_;       // decode trigger: token window [0, N)
  bool forced_decode_ = false;
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_H_
