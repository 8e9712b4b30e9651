// Test harness for CaptureController: an injected clock, plan builders, and a checker that
// applies the action protocol (kOpen, kRecordOn ... kRecordOff, kClose) like a Session would
// and records every capture. Protocol violations are reported as gtest failures.
#ifndef RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_TEST_UTIL_H_
#define RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_TEST_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "rlprof/config/plan.h"
#include "src/config/sampling.h"
#include "src/runtime/capture_controller.h"

namespace rlprof::runtime::testing {

inline config::StepSelection StepList(std::vector<int64_t> steps) {
  config::StepSelection s;
  s.kind = config::StepSelection::Kind::kList;
  s.list = std::move(steps);
  return s;
}

inline config::StepSelection StepRange(int64_t start, int64_t end) {
  config::StepSelection s;
  s.kind = config::StepSelection::Kind::kRange;
  s.start = start;
  s.end = end;
  return s;
}

inline config::StepSelection AllSteps() {
  config::StepSelection s;
  s.kind = config::StepSelection::Kind::kAll;
  return s;
}

inline config::Plan MakePlan(config::StepSelection steps, bool continuous = false) {
  config::Plan p;
  p.tool = config::Tool::kRlprof;
  p.steps = std::move(steps);
  p.continuous_steps = continuous;
  return p;
}

inline config::ProcessPlan EndToEnd(std::vector<std::string> roles = {"actor"}) {
  config::ProcessPlan p;
  p.enabled = true;
  p.roles = std::move(roles);
  p.mode = config::CaptureMode::kEndToEnd;
  return p;
}

// A schedule of `role` in the process (stage "" = every stage of the role that runs its unit).
inline config::ProcessPlan WithSchedule(config::ProcessPlan p, config::Schedule s,
                                        std::string role = "actor") {
  config::StageSchedule e;
  e.role = role;
  e.block = role + ".profiler";
  e.schedule = std::move(s);
  p.schedules.push_back(std::move(e));
  return p;
}

// A token window [start, end) of the rollout role.
inline config::ProcessPlan WithTokens(config::ProcessPlan p, std::optional<int64_t> start,
                                      std::optional<int64_t> end) {
  config::StageSchedule e;
  e.role = "rollout";
  e.block = "rollout.profiler";
  e.schedule = config::TokenWindowSchedule(start, end);
  e.token_window = true;
  p.schedules.push_back(std::move(e));
  return p;
}

inline config::ProcessPlan Discrete(std::vector<std::string> stages = {}) {
  config::ProcessPlan p = EndToEnd();
  p.mode = config::CaptureMode::kDiscrete;
  p.stages = std::move(stages);
  return p;
}

inline config::Schedule MakeSchedule(int64_t skip_first, int64_t wait, int64_t warmup,
                                     int64_t active, int64_t repeat,
                                     config::SubStepKind unit = config::SubStepKind::kMiniBatch) {
  config::Schedule s;
  s.skip_first = skip_first;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  s.unit = unit;
  return s;
}

// One capture as a Session would have written it.
struct CaptureRecord {
  std::string scope;
  std::vector<int64_t> open_steps;
  std::vector<int64_t> steps;  // from kClose
  std::string role, stage;
  int part = 0;
  std::string reason;
  int64_t open_ns = 0;
  int64_t close_ns = 0;
  bool closed = false;
  std::string sampled;  // scheduled captures: "micro_batch [3, 5)" (+ " cut"), else ""

  // "scope [steps] reason", the compact form most tests compare.
  std::string Summary() const {
    std::string s = scope + " [";
    for (size_t i = 0; i < steps.size(); ++i) s += (i ? "," : "") + std::to_string(steps[i]);
    return s + "] " + reason;
  }
};

class Harness {
 public:
  Harness(const config::Plan& plan, const config::ProcessPlan& proc) : ctl_(plan, proc) {}

  CaptureController& ctl() { return ctl_; }
  int64_t now() const { return now_; }
  void Advance(int64_t ns) { now_ += ns; }
  // Number of actions returned by the last call.
  size_t last_actions() const { return last_; }
  size_t total_actions() const { return total_; }

  Harness& StepBegin(int64_t step) { return Apply(ctl_.OnStepBegin(step, Tick())); }
  Harness& StepEnd() { return Apply(ctl_.OnStepEnd(Tick())); }
  Harness& Step(int64_t step) { return StepBegin(step).StepEnd(); }
  Harness& StageBegin(const std::string& stage, const std::string& role = "actor",
                      std::optional<config::SubStepKind> counts = std::nullopt) {
    return Apply(ctl_.OnStageBegin(role, stage, Tick(), counts));
  }
  Harness& StageEnd() { return Apply(ctl_.OnStageEnd(Tick())); }
  Harness& Stage(const std::string& stage, const std::string& role = "actor") {
    return StageBegin(stage, role).StageEnd();
  }
  Harness& SubStep(config::SubStepKind kind, int n = 1) {
    for (int i = 0; i < n; ++i) Apply(ctl_.OnSubStep(kind, Tick()));
    return *this;
  }
  Harness& MiniBatches(int n) { return SubStep(config::SubStepKind::kMiniBatch, n); }
  Harness& Decodes(int n) { return SubStep(config::SubStepKind::kDecode, n); }
  Harness& TickAt(int64_t now_ns) {
    now_ = now_ns;
    return Apply(ctl_.OnTick(now_));
  }
  Harness& Budget() { return Apply(ctl_.OnBudgetExceeded(Tick())); }
  Harness& Error() { return Apply(ctl_.OnError(Tick())); }
  Harness& Stop() { return Apply(ctl_.OnStop(Tick())); }

  Harness& Apply(const std::vector<WindowAction>& actions) {
    last_ = actions.size();
    total_ += actions.size();
    for (const WindowAction& a : actions) Check(a);
    EXPECT_EQ(ctl_.window_open(), state_ == State::kRecording) << "after " << Describe(actions);
    EXPECT_EQ(ctl_.recording(), state_ == State::kRecording);
    return *this;
  }

  const std::vector<CaptureRecord>& captures() const { return captures_; }
  std::vector<std::string> Summaries() const {
    std::vector<std::string> out;
    for (const CaptureRecord& c : captures_) out.push_back(c.Summary());
    return out;
  }
  bool open() const { return state_ != State::kIdle; }

 private:
  enum class State { kIdle, kOpened, kRecording, kPaused };

  int64_t Tick() { return now_ += 1000; }

  static std::string Describe(const std::vector<WindowAction>& actions) {
    std::string s;
    for (const WindowAction& a : actions) s += a.ToString() + "; ";
    return s;
  }

  void Check(const WindowAction& a) {
    using T = WindowAction::Type;
    switch (a.type) {
      case T::kOpen: {
        ASSERT_EQ(state_, State::kIdle) << "open while a capture is open: " << a.ToString();
        ASSERT_EQ(a.steps.size(), 1u) << a.ToString();
        CaptureRecord c;
        c.scope = a.scope;
        c.open_steps = a.steps;
        c.role = a.role;
        c.stage = a.stage;
        c.part = a.part;
        c.open_ns = now_;
        captures_.push_back(c);
        state_ = State::kOpened;
        break;
      }
      case T::kRecordOn:
        ASSERT_EQ(state_, State::kOpened) << "record_on must follow open: " << a.ToString();
        EXPECT_EQ(a.scope, captures_.back().scope);
        state_ = State::kRecording;
        break;
      case T::kRecordOff:
        ASSERT_EQ(state_, State::kRecording) << "record_off while not recording: " << a.ToString();
        EXPECT_EQ(a.scope, captures_.back().scope);
        state_ = State::kPaused;
        break;
      case T::kClose: {
        ASSERT_EQ(state_, State::kPaused) << "close must follow record_off: " << a.ToString();
        CaptureRecord& c = captures_.back();
        EXPECT_EQ(a.scope, c.scope);
        EXPECT_EQ(a.role, c.role);
        EXPECT_EQ(a.stage, c.stage);
        EXPECT_EQ(a.part, c.part);
        ASSERT_FALSE(a.steps.empty());
        EXPECT_EQ(a.steps.front(), c.open_steps.front()) << "first step changed: " << a.ToString();
        for (size_t i = 1; i < a.steps.size(); ++i) EXPECT_LT(a.steps[i - 1], a.steps[i]);
        c.steps = a.steps;
        c.reason = CloseReasonName(a.reason);
        if (a.schedule) {
          c.sampled = std::string(config::SubStepKindName(a.schedule->unit)) + " [" +
                      std::to_string(a.sub_first) + ", " + std::to_string(a.sub_first + a.sub_count) +
                      ")" + (a.period_complete ? "" : " cut");
          EXPECT_EQ(a.period_complete, a.reason == CloseReason::kSchedule) << a.ToString();
          EXPECT_GE(a.sub_count, 0) << a.ToString();
        }
        c.close_ns = now_;
        c.closed = true;
        state_ = State::kIdle;
        break;
      }
    }
  }

  CaptureController ctl_;
  int64_t now_ = 1'000'000;
  State state_ = State::kIdle;
  std::vector<CaptureRecord> captures_;
  size_t last_ = 0;
  size_t total_ = 0;
};

using Summaries = std::vector<std::string>;

}  // namespace rlprof::runtime::testing

#endif  // RLPROF_SRC_RUNTIME_CAPTURE_CONTROLLER_TEST_UTIL_H_
