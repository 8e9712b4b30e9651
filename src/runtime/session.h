// SessionImpl: one profiled process's capture session. It resolves the process's plan,
// feeds step / stage / sub-step boundaries to the CaptureController, applies its window
// actions (Recorder windows + Writer captures), and records the boundary events themselves.
// The public face is rlprof::Session (include/rlprof/rlprof.hpp).
//
//   auto s = SessionImpl::Create(plan, options, [](const char* k) { return getenv(k); });
//   s->BeginStep(2); s->BeginStage("actor", "actor_update", std::nullopt); …
//   s->EndStage(); s->EndStep(); s->Shutdown();
//
// Faults never reach the caller: an unusable save path, a second concurrent session, a
// capture that cannot be created or written (full disk), a writer thread that cannot start,
// or any exception inside an entry point print one warning and disable the session (see
// docs/reliability.md). No method throws.
// Thread-safety: all methods are serialised by an internal mutex; the writer thread calls
// back (tick, budget, fatal) through the same mutex.
#ifndef RLPROF_SRC_RUNTIME_SESSION_H_
#define RLPROF_SRC_RUNTIME_SESSION_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rlprof/config/plan.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/capture_controller.h"
#include "src/runtime/clock.h"
#include "src/runtime/identity.h"
#include "src/runtime/source.h"
#include "src/runtime/trigger.h"
#include "src/runtime/writer.h"

namespace rlprof::runtime {

class SessionImpl {
 public:
  static std::unique_ptr<SessionImpl> Create(const config::Plan& plan, const SessionOptions& options,
                                             const EnvLookup& env);
  ~SessionImpl();

  bool enabled() const { return enabled_ && !disabled_.load(std::memory_order_relaxed); }
  const Identity& identity() const { return id_; }
  const std::string& run_id() const { return run_id_; }
  const std::string& run_dir() const { return run_dir_; }
  const config::ProcessPlan& process_plan() const { return proc_; }

  void BeginStep(int64_t step);
  void EndStep();
  void BeginStage(const std::string& role, const std::string& stage,
                  std::optional<config::SubStepKind> counts);
  void EndStage();
  void SubStep(config::SubStepKind kind);
  bool StartCapture(const std::string& scope);
  void StopCapture();
  bool Flush(double timeout_s);
  std::vector<std::string> Captures() const;
  void SetClockOffsetToRank0(int64_t offset_ns) {
    if (writer_) writer_->SetClockOffsetToRank0(offset_ns);
  }
  void Shutdown() noexcept;

  // For the signal handler: asks the writer to finalise open captures and waits (bounded).
  void FlushFromSignal(int timeout_ms);
  // The generation of the window being recorded (0 = none); for tests.
  uint32_t recording_gen() const;
  // Names of the sources running in this session (configured and wanted by the plan).
  std::vector<std::string> SourceNames() const;
  // `rlprof trigger` requests this session acted on, found malformed (ignored), refused (not
  // this user's, or a directory others can write) and could not honour (a triggered window
  // still running). The requests are polled on the writer thread (src/runtime/trigger.h).
  struct TriggerCounts {
    uint64_t accepted = 0, malformed = 0, refused = 0, busy = 0;
  };
  TriggerCounts trigger_counts() const {
    return {trig_accepted_.load(), trig_malformed_.load(), trig_refused_.load(), trig_busy_.load()};
  }

 private:
  SessionImpl() = default;
  void Setup(const config::Plan& plan, const SessionOptions& options, const EnvLookup& env);
  // An unexpected exception at an entry point: one warning, profiling off, windows closed.
  void Fault(const char* what, const char* detail) noexcept;
  void Apply(const std::vector<WindowAction>& actions);  // mu_ held
  void CloseManualLocked(const char* reason);
  void Disable(const std::string& why);
  void OnTick();
  void PollTriggers();  // the writer thread, each wake-up
  void BoundaryLocked();  // a step / stage boundary: sources' Boundary() if a window is open
  void OnBudget(uint32_t gen);
  void OnFatal(const std::string& message);
  void RecordBoundary(uint32_t gen, format::Category cat, format::EventKind kind, uint32_t name,
                      uint64_t t0, uint64_t t1, uint32_t arg0, uint32_t arg1);

  // True in a child forked from the creating process (e.g. a DataLoader worker): it has no
  // writer thread and must not touch locks another thread may have held at the fork.
  bool forked() const;

  mutable std::mutex mu_;
  int64_t creator_pid_ = 0;
  config::Plan plan_;
  config::ProcessPlan proc_;
  Identity id_;
  std::string run_id_, run_dir_;
  bool enabled_ = false;
  std::atomic<bool> disabled_{false};
  std::atomic<bool> warned_{false};
  bool stopped_ = false;
  bool recorder_session_ = false;
  ClockCalibration clock_;
  std::unique_ptr<CaptureController> ctl_;
  std::unique_ptr<Writer> writer_;

  // Window state (mu_).
  WindowOpen pending_open_;   // between kOpen and kRecordOn
  uint32_t ctl_gen_ = 0;      // the controller's capture being recorded
  uint64_t ctl_close_ticks_ = 0;
  uint32_t manual_gen_ = 0;
  // Boundary events in flight.
  struct Span {
    uint64_t t0 = 0;
    uint32_t gen = 0;
    uint32_t name = 0;
    uint32_t role = 0;
    int64_t value = 0;
  };
  std::optional<Span> step_;
  int64_t current_step_ = 0;
  std::vector<Span> stages_;
  std::map<config::SubStepKind, int64_t> substeps_;
  // The sources this process runs (source.h): built-in memory, and those registered.
  std::shared_ptr<SourceSet> sources_;
  bool listening_ = false;  // sources_ is the SourceRegistry's listener
  bool quiet_ = false;
  // `rlprof trigger` (writer thread only, except the counters).
  std::unique_ptr<TriggerInbox> trigger_;
  std::string trigger_id_;  // the last request accepted (mu_): named in its captures' manifests
  std::atomic<uint64_t> trig_accepted_{0}, trig_malformed_{0}, trig_refused_{0}, trig_busy_{0};
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_SESSION_H_
