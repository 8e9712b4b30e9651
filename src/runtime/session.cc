#include "src/runtime/session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "src/base/files.h"
#include "src/config/plan_json.h"
#include "src/runtime/memory_source.h"
#include "src/runtime/sample_source.h"
#include "src/runtime/signals.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::runtime {
namespace {

using format::Category;
using format::EventKind;

std::string ProcessPlanJson(const config::Plan& plan, const config::ProcessPlan& p) {
  nlohmann::ordered_json j = config::PlanToJson(plan);
  nlohmann::ordered_json proc;
  proc["enabled"] = p.enabled;
  proc["roles"] = p.roles;
  proc["mode"] = config::CaptureModeName(p.mode);
  proc["stages"] = p.stages;
  proc["contents"] = p.contents.Names();
  proc["level"] = p.level;
  if (p.ops_sampling < 1) proc["ops_sampling"] = p.ops_sampling;
  nlohmann::ordered_json schedules = nlohmann::ordered_json::array();
  for (const auto& s : p.schedules) schedules.push_back(config::StageScheduleToJson(s));
  proc["schedules"] = std::move(schedules);
  proc["warnings"] = p.warnings;
  j["process"] = std::move(proc);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// The manifest's window.sampling of a scheduled capture: which sub-steps it holds.
format::Manifest::Sampling SamplingOf(const WindowAction& a) {
  format::Manifest::Sampling s;
  if (!a.schedule) return s;
  s.unit = config::SubStepKindName(a.schedule->unit);
  s.first = a.sub_first;
  s.count = a.sub_count;
  s.complete = a.period_complete;
  s.schedule_json = config::ScheduleToJson(*a.schedule).dump();
  s.from = a.schedule_from;
  return s;
}

// 128 MiB per chunk: a larger buffer.events_per_thread is clamped (a pool holds one chunk per
// recording thread plus spares).
constexpr uint64_t kMaxRecordsPerChunk = uint64_t{1} << 22;

void Warn(const std::string& msg) { std::fprintf(stderr, "rlprof: warning: %s\n", msg.c_str()); }

double RealtimeSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// Every entry point the training job calls is wrapped: an exception (std::bad_alloc, a
// std::system_error, a bug) never reaches the job; it disables profiling with one warning.
#define RLPROF_SESSION_GUARD(entry, fallback)     \
  catch (const std::exception& e) {               \
    Fault(entry, e.what());                       \
    return fallback;                              \
  }                                               \
  catch (...) {                                   \
    Fault(entry, "unknown exception");            \
    return fallback;                              \
  }

void SessionImpl::Fault(const char* what, const char* detail) noexcept {
  disabled_.store(true);
  if (!warned_.exchange(true))
    std::fprintf(stderr,
                 "rlprof: warning: internal error in %s (%s); profiling is disabled, the program "
                 "continues\n",
                 what, detail);
  // Stop recording at once (if this session is the one recording); then close the windows
  // properly if that still works.
  if (recorder_session_) internal::StoreWindow(0, __ATOMIC_RELAXED);
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || writer_ == nullptr) return;
    CloseManualLocked("error");
    if (ctl_gen_ != 0 && ctl_ != nullptr) Apply(ctl_->OnError(MonotonicNowNs()));
  } catch (...) {
  }
}

std::unique_ptr<SessionImpl> SessionImpl::Create(const config::Plan& plan,
                                                 const SessionOptions& options,
                                                 const EnvLookup& env) {
  std::unique_ptr<SessionImpl> s(new SessionImpl);
  try {
    s->Setup(plan, options, env);
  } catch (const std::exception& e) {
    s->Fault("session set-up", e.what());
    s->Shutdown();
  } catch (...) {
    s->Fault("session set-up", "unknown exception");
    s->Shutdown();
  }
  return s;
}

void SessionImpl::Setup(const config::Plan& plan, const SessionOptions& options,
                        const EnvLookup& env) {
  SessionImpl* s = this;
  s->creator_pid_ = getpid();
  s->plan_ = plan;
  s->id_ = ResolveIdentity(options, env);
  for (const std::string& w : s->id_.warnings) Warn(w);
  s->run_id_ = MakeRunId(options.run_id, env);
  s->run_dir_ = base::AbsolutePath(plan.save_path) + "/" + s->run_id_;
  s->proc_ = config::ResolveForProcess(plan, s->id_.roles, s->id_.rank);
  s->ctl_ = std::make_unique<CaptureController>(plan, s->proc_);
  if (!s->proc_.enabled) return;  // not selected: nothing to set up, markers stay off

  Recorder& rec = Recorder::Get();
  if (rec.session_live()) {
    s->Disable("another rlprof session is already recording in this process; this one records nothing");
    return;
  }
  if (base::Status st = base::MakeDirs(s->run_dir_); !st.ok() || access(s->run_dir_.c_str(), W_OK) != 0) {
    s->Disable("cannot write captures under " + s->run_dir_ + " (" +
               (st.ok() ? std::string(std::strerror(errno)) : st.message()) +
               "); profiling is disabled, the program continues");
    return;
  }
  const char* clock_env = env("RLPROF_CLOCK");
  const bool allow_tsc =
      options.allow_tsc && !(clock_env != nullptr && std::strcmp(clock_env, "monotonic") == 0);
  s->clock_ = CalibrateClock(allow_tsc);

  RecorderConfig rc;
  rc.capacity = static_cast<uint32_t>(
      std::clamp<uint64_t>(plan.buffer_events_per_thread, 1, kMaxRecordsPerChunk));
  rc.policy = plan.buffer_policy;
  rec.BeginSession(rc);
  s->recorder_session_ = true;

  WriterOptions wo;
  wo.run_dir = s->run_dir_;
  wo.run_id = s->run_id_;
  wo.identity = s->id_;
  wo.contents = s->proc_.contents.Names();
  if (s->proc_.contents.RecordsOperators()) wo.ops_sampling = s->proc_.ops_sampling;
  wo.config_json = ProcessPlanJson(plan, s->proc_);
  wo.clock = s->clock_;
  wo.flush_interval_s = plan.flush_interval_s > 0 ? plan.flush_interval_s : 1.0;
  // Sources (source.h): the built-in memory sampler, then every registered source the plan
  // wants (the registry keeps adding sources registered while this session lives).
  SourceContext sc;
  sc.plan = &s->plan_;
  sc.process = &s->proc_;
  sc.tsc_ticks = s->clock_.converter.source == ClockSource::kTsc;
  sc.flush_interval_s = wo.flush_interval_s;
  s->sources_ = std::make_shared<SourceSet>(sc);
  s->sources_->Add(std::make_shared<MemorySource>());
  // Each sample's life (rlprof_sample_record): the C API finds the live session's source.
  auto samples = std::make_shared<SampleSource>();
  if (s->sources_->Add(samples)) SampleSource::SetCurrent(samples);
  SourceRegistry::Get().SetListener(s->sources_.get());
  s->listening_ = true;
  // The writer's wake-ups drive the sources' ticks (contents memory: the RSS interval): it
  // asks the sources for their interval at each wake-up (a source may register later).
  wo.sources = s->sources_;
  wo.budget = plan.budget;
  wo.quiet = options.quiet;
  SessionImpl* self = s;
  wo.on_tick = [self] { self->OnTick(); };
  // `rlprof trigger`: requests are polled on the writer thread, never on the training thread.
  s->quiet_ = options.quiet;
  if (const char* t = env("RLPROF_TRIGGER"); !(t != nullptr && std::strcmp(t, "0") == 0)) {
    s->trigger_ = std::make_unique<TriggerInbox>(TriggerDir(), RealtimeSeconds());
    wo.on_poll = [self] { self->PollTriggers(); };
  }
  wo.on_budget = [self](uint32_t gen) { self->OnBudget(gen); };
  wo.on_fatal = [self](const std::string& m) { self->OnFatal(m); };
  s->writer_ = std::make_unique<Writer>(std::move(wo));
  if (base::Status st = s->writer_->Start(); !st.ok()) {
    s->Disable(st.message() + "; profiling is disabled, the program continues");
    rec.EndSession();
    s->recorder_session_ = false;
    return;
  }
  s->enabled_ = true;
  if (options.install_signal_handlers) RegisterSignalFlush(self);
}

SessionImpl::~SessionImpl() {
  if (forked()) {
    // The writer thread and the Recorder's state belong to the parent: leave them alone.
    (void)writer_.release();
    (void)ctl_.release();
    return;
  }
  Shutdown();
}

bool SessionImpl::forked() const { return getpid() != creator_pid_; }

void SessionImpl::Disable(const std::string& why) {
  disabled_.store(true);
  if (!warned_.exchange(true)) Warn(why);
}

void SessionImpl::RecordBoundary(uint32_t gen, Category cat, EventKind kind, uint32_t name,
                                 uint64_t t0, uint64_t t1, uint32_t arg0, uint32_t arg1) {
  if (gen == 0 || internal::OpenWindow() != gen) return;
  Record e{};
  e.ts_ns = static_cast<int64_t>(t0);
  e.payload = kind == EventKind::kComplete ? static_cast<int64_t>(t1 - t0) : 0;
  e.name = name;
  e.kind = kind;
  e.category = cat;
  e.arg0 = arg0;
  e.arg1 = arg1;
  EmitRecord(gen, e);
}

void SessionImpl::BoundaryLocked() {
  if (sources_ == nullptr) return;
  if (const uint32_t gen = internal::OpenWindow(); gen != 0) sources_->Boundary(gen);
}

std::vector<std::string> SessionImpl::SourceNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sources_ != nullptr ? sources_->Names() : std::vector<std::string>{};
}

uint32_t SessionImpl::recording_gen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return manual_gen_ != 0 ? manual_gen_ : ctl_gen_;
}

void SessionImpl::Apply(const std::vector<WindowAction>& actions) {
  for (const WindowAction& a : actions) {
    switch (a.type) {
      case WindowAction::Type::kOpen:
        pending_open_ = {};
        pending_open_.scope = a.scope;
        pending_open_.mode = config::CaptureModeName(proc_.mode);
        pending_open_.role = a.role;
        pending_open_.stage = a.stage;
        pending_open_.trigger = a.triggered ? trigger_id_ : std::string();
        pending_open_.first_step = a.steps.empty() ? current_step_ : a.steps.front();
        break;
      case WindowAction::Type::kRecordOn: {
        if (!enabled() || manual_gen_ != 0 || ctl_gen_ != 0) break;
        const uint64_t t = internal::ReadTicks();  // before the flag: no event precedes it
        const uint32_t gen = Recorder::Get().OpenWindow();
        if (gen == 0) break;
        pending_open_.gen = gen;
        pending_open_.open_ticks = t;
        writer_->Open(pending_open_);
        ctl_gen_ = gen;
        if (sources_ != nullptr) sources_->Start(gen);
        break;
      }
      case WindowAction::Type::kRecordOff:
        if (ctl_gen_ != 0 && sources_ != nullptr) sources_->Flush(ctl_gen_);
        ctl_close_ticks_ = internal::ReadTicks();
        if (ctl_gen_ != 0) {
          Recorder::Get().CloseWindow(ctl_gen_);
          if (sources_ != nullptr) sources_->Stop(ctl_gen_);
        }
        break;
      case WindowAction::Type::kClose:
        if (ctl_gen_ != 0)
          writer_->Close({ctl_gen_, CloseReasonName(a.reason), a.steps, ctl_close_ticks_,
                          SamplingOf(a)});
        ctl_gen_ = 0;
        break;
    }
  }
}

void SessionImpl::BeginStep(int64_t step) try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  if (step_) {  // a step without EndStep: the controller ends it too
    RecordBoundary(step_->gen, Category::kStep, EventKind::kComplete, step_->name, step_->t0,
                   internal::ReadTicks(), static_cast<uint32_t>(step_->value), 0);
    step_.reset();
  }
  current_step_ = step;
  substeps_.clear();
  Apply(ctl_->OnStepBegin(step, MonotonicNowNs()));
  Span sp;
  sp.gen = internal::OpenWindow();
  sp.name = Recorder::Get().interner().InternString("step " + std::to_string(step));
  sp.value = step;
  sp.t0 = internal::ReadTicks();
  step_ = sp;
  BoundaryLocked();
}
RLPROF_SESSION_GUARD("BeginStep", )

void SessionImpl::EndStep() try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  BoundaryLocked();
  if (step_) {
    RecordBoundary(step_->gen, Category::kStep, EventKind::kComplete, step_->name, step_->t0,
                   internal::ReadTicks(), static_cast<uint32_t>(step_->value), 0);
    step_.reset();
  }
  Apply(ctl_->OnStepEnd(MonotonicNowNs()));
}
RLPROF_SESSION_GUARD("EndStep", )

void SessionImpl::BeginStage(const std::string& role, const std::string& stage,
                             std::optional<config::SubStepKind> counts) try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  Apply(ctl_->OnStageBegin(role, stage, MonotonicNowNs(), counts));
  if (stages_.empty()) substeps_.clear();  // sub-step indices count from each outermost stage call
  Span sp;
  sp.gen = internal::OpenWindow();
  Interner& in = Recorder::Get().interner();
  sp.name = in.InternString(stage);
  sp.role = in.InternString(role);
  sp.t0 = internal::ReadTicks();
  stages_.push_back(sp);
  BoundaryLocked();
}
RLPROF_SESSION_GUARD("BeginStage", )

void SessionImpl::EndStage() try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || stages_.empty()) return;
  const Span sp = stages_.back();
  stages_.pop_back();
  BoundaryLocked();
  RecordBoundary(sp.gen, Category::kStage, EventKind::kComplete, sp.name, sp.t0,
                 internal::ReadTicks(), 0, sp.role);
  Apply(ctl_->OnStageEnd(MonotonicNowNs()));
}
RLPROF_SESSION_GUARD("EndStage", )

void SessionImpl::SubStep(config::SubStepKind kind) try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  // The index the open window's schedule counts it as (the manifest's window.sampling uses the
  // same numbers), else its index in the outermost stage call (or the step, outside stages).
  int64_t index = substeps_[kind]++;
  if (const ScheduleTracker* t = ctl_->tracker(); t != nullptr && t->schedule().unit == kind)
    index = t->k();
  const uint32_t gen = internal::OpenWindow();
  if (gen != 0) {
    const uint32_t name = Recorder::Get().interner().InternString(config::SubStepKindName(kind));
    RecordBoundary(gen, Category::kSubStep, EventKind::kInstant, name, internal::ReadTicks(), 0,
                   static_cast<uint32_t>(index), 0);
  }
  Apply(ctl_->OnSubStep(kind, MonotonicNowNs()));
}
RLPROF_SESSION_GUARD("SubStep", )

bool SessionImpl::StartCapture(const std::string& scope) try {
  if (forked()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || !enabled() || manual_gen_ != 0 || ctl_gen_ != 0) return false;
  const uint64_t t = internal::ReadTicks();
  const uint32_t gen = Recorder::Get().OpenWindow();
  if (gen == 0) return false;
  WindowOpen w;
  w.gen = gen;
  w.scope = scope.empty() ? "manual" : scope;
  w.mode = "manual";
  w.first_step = current_step_;
  w.open_ticks = t;
  writer_->Open(w);
  manual_gen_ = gen;
  if (sources_ != nullptr) sources_->Start(gen);
  return true;
}
RLPROF_SESSION_GUARD("StartCapture", false)

void SessionImpl::CloseManualLocked(const char* reason) {
  if (manual_gen_ == 0) return;
  if (sources_ != nullptr) sources_->Flush(manual_gen_);
  const uint64_t t = internal::ReadTicks();
  Recorder::Get().CloseWindow(manual_gen_);
  if (sources_ != nullptr) sources_->Stop(manual_gen_);
  writer_->Close({manual_gen_, reason, {current_step_}, t});
  manual_gen_ = 0;
}

void SessionImpl::StopCapture() try {
  if (forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  CloseManualLocked("shutdown");
}
RLPROF_SESSION_GUARD("StopCapture", )

bool SessionImpl::Flush(double timeout_s) try {
  if (!writer_ || forked()) return true;
  writer_->Flush();  // an open window's events so far too
  return writer_->WaitIdle(timeout_s);
}
RLPROF_SESSION_GUARD("Flush", false)

std::vector<std::string> SessionImpl::Captures() const try {
  return writer_ ? writer_->Captures() : std::vector<std::string>{};
} catch (...) {  // const: no Fault(); only an allocation can fail here
  return {};
}

void SessionImpl::OnTick() try {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  if (sources_ != nullptr)
    if (const uint32_t gen = internal::OpenWindow(); gen != 0) sources_->Tick(gen);
  if (ctl_gen_ == 0) return;
  Apply(ctl_->OnTick(MonotonicNowNs()));
}
RLPROF_SESSION_GUARD("the writer's tick", )

void SessionImpl::PollTriggers() try {
  if (trigger_ == nullptr || disabled_.load(std::memory_order_relaxed)) return;
  std::vector<TriggerRequest> reqs = trigger_->Poll(id_, run_id_, RealtimeSeconds());
  if (trigger_->malformed() > trig_malformed_.load()) {
    if (trig_malformed_.load() == 0)
      Warn("malformed trigger request(s) in " + trigger_->dir() + " ignored (see docs/runtime.md)");
    trig_malformed_.store(trigger_->malformed());
  }
  if (trigger_->refused() > trig_refused_.load()) {
    if (trig_refused_.load() == 0) {
      const base::Status why = CheckTriggerDir(trigger_->dir());
      Warn("trigger request(s) refused: " + (why.ok() ? std::string("not regular files of this user") : why.message()));
    }
    trig_refused_.store(trigger_->refused());
  }
  if (reqs.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || ctl_ == nullptr) return;
  for (const TriggerRequest& r : reqs) {
    if (!ctl_->Trigger(r.steps, r.decode_steps)) {
      ++trig_busy_;
      if (!quiet_) std::fprintf(stderr, "rlprof: trigger %s ignored: a triggered window is still running\n", r.id.c_str());
      continue;
    }
    ++trig_accepted_;
    trigger_id_ = r.id;
    if (!quiet_)
      std::fprintf(stderr, "rlprof: trigger %s: capturing %lld %s from the next step (rank %lld)\n", r.id.c_str(),
                   static_cast<long long>(r.steps > 0 ? r.steps : r.decode_steps),
                   r.steps > 0 ? "step(s)" : "decode step(s)", static_cast<long long>(id_.rank));
  }
}
RLPROF_SESSION_GUARD("polling trigger requests", )

void SessionImpl::OnBudget(uint32_t gen) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  if (gen == manual_gen_) {
    CloseManualLocked("budget");
  } else if (gen == ctl_gen_) {
    Apply(ctl_->OnBudgetExceeded(MonotonicNowNs()));
  }
}
RLPROF_SESSION_GUARD("closing a window over budget", )

void SessionImpl::OnFatal(const std::string& message) try {
  const std::string why = "cannot write captures under " + run_dir_ + " (" + message +
                          "); profiling is disabled, the program continues";
  {
    // The open windows close with reason "error" before the session says it is disabled: a
    // program that ends its step as soon as enabled() turns false would otherwise close the
    // window first, as step_end (seen under load: CrashTest.DiskErrorMidCapture…).
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      if (manual_gen_ != 0) CloseManualLocked("error");
      if (ctl_gen_ != 0) Apply(ctl_->OnError(MonotonicNowNs()));
    }
  }
  Disable(why);
}
RLPROF_SESSION_GUARD("disabling after a write error", )

void SessionImpl::FlushFromSignal(int timeout_ms) {
  if (writer_ == nullptr || forked()) return;
  internal::StoreWindow(0, __ATOMIC_RELAXED);
  writer_->RequestSignalFlush();
  writer_->WaitSignalFlush(timeout_ms);
}

void SessionImpl::Shutdown() noexcept {
  if (forked()) return;
  // Each phase is guarded on its own: whatever fails, the writer thread is still joined (a
  // joinable std::thread at exit would std::terminate the job) and the Recorder released.
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    try {
      if (ctl_ != nullptr) Apply(ctl_->OnStop(MonotonicNowNs()));
      CloseManualLocked("shutdown");
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
  }
  if (!error.empty()) Fault("Shutdown", error.c_str());
  UnregisterSignalFlush(this);
  if (listening_) {
    SourceRegistry::Get().SetListener(nullptr);
    listening_ = false;
  }
  if (writer_ != nullptr) writer_->Stop();  // without mu_: the writer may be calling back
  if (sources_ != nullptr) sources_->Shutdown();
  if (recorder_session_) {
    try {
      Recorder::Get().EndSession();
    } catch (...) {
    }
    recorder_session_ = false;
  }
}

}  // namespace rlprof::runtime
