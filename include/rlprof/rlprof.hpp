// rlprof's C++ API: record ranges, marks and counters from any thread, and tell the runtime
// where RL steps, stages and sub-steps begin so that it can open the capture windows a config
// selects (see docs/runtime.md).
//
//   #include "rlprof/rlprof.hpp"
//   std::string err;
//   if (!rlprof::InitFromConfig("profile.yaml", {"rlprof.steps=[2]"}, {}, &err))
//     fprintf(stderr, "%s\n", err.c_str());               // profiling off, the job goes on
//   for (int64_t step = 1; step <= 3; ++step) {
//     rlprof::BeginStep(step);
//     { auto stage = rlprof::Annotate("actor", "actor_update");
//       RLPROF_RANGE("forward");                           // static names: interned by pointer
//       rlprof::Counter("loss", 0.25); }
//     rlprof::EndStep();
//   }
//   rlprof::Shutdown();                                    // also runs at exit
//
// This header is header-only: every call goes through the C ABI of include/rlprof/rlprof.h,
// the one boundary of librlprof.so (link it: `-lrlprof`, or CMake's rlprof::rlprof). No C++
// type crosses the library's boundary, so a program built with another compiler or standard
// library works with the same librlprof.so.
//
// Cost: outside a capture window every marker is one predictable branch on a relaxed load
// (inline, no call); inside, a range is two clock reads (inline) plus one call that stores a
// 32-byte record into a pre-faulted per-thread buffer, without locks or allocation (the first
// event of a thread in each window takes a short lock to attach a buffer). With RLPROF_DISABLE
// defined, the RLPROF_* macros compile to nothing.
//
// Names: `const char*` names are interned by pointer, so they must stay valid and unchanged
// until the session ends (string literals are ideal). For names built at run time call
// InternName() once and keep the pointer it returns.
//
// Thread-safety: markers (ranges, marks, counters, SetThreadName) may be called from any
// thread. Session control (BeginStep/EndStep, stages, sub-steps, captures) is meant for the
// training loop's thread; calls are serialised internally, so other threads may call it too.
// One session records at a time per process.
//
// Faults: no function of this API throws (beyond std::bad_alloc of its own strings). An
// unwritable or full save path, a writer thread that cannot start, or any unexpected error
// inside the runtime turns profiling off with one warning on stderr and the program goes on
// (docs/reliability.md). Only a config that cannot be loaded is reported to the caller
// (InitFromConfig / CreateFromConfig fail with the message).
#ifndef RLPROF_INCLUDE_RLPROF_RLPROF_HPP_
#define RLPROF_INCLUDE_RLPROF_RLPROF_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"
#include "rlprof/rlprof.h"

namespace rlprof {

namespace internal {

// The open capture window's generation (0 = none) and the hot path's clock, inline.
inline uint32_t OpenWindow() noexcept { return rlprof_window_inline(); }
inline uint64_t ReadTicks() noexcept { return rlprof_ticks_inline(); }

inline int SubStepCode(config::SubStepKind k) noexcept {
  switch (k) {
    case config::SubStepKind::kDecode: return RLPROF_SUB_STEP_DECODE;
    case config::SubStepKind::kMicroBatch: return RLPROF_SUB_STEP_MICRO_BATCH;
    case config::SubStepKind::kMiniBatch: return RLPROF_SUB_STEP_MINI_BATCH;
    case config::SubStepKind::kStep: return RLPROF_SUB_STEP_STEP;
  }
  return 0;
}

inline std::vector<std::string> SplitCommas(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::string_view v(s);
  while (!v.empty()) {
    const size_t c = v.find(',');
    const std::string_view w = v.substr(0, c);
    if (!w.empty()) out.emplace_back(w);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
  return out;
}

inline std::string JoinCommas(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace internal

// ---- Markers ----

// True while a capture window is open in this process.
inline bool Recording() noexcept { return internal::OpenWindow() != 0; }

// An instant event on the current thread.
inline void Mark(const char* name) noexcept {
  if (internal::OpenWindow()) rlprof_mark(name);
}

// One sample of the counter series `track`.
inline void Counter(const char* track, double value) noexcept {
  if (internal::OpenWindow()) rlprof_counter(track, value);
}

// A range that may end on another thread (mstx semantics). Returns 0 outside a window;
// RangeEnd(0) is a no-op. A range whose end falls in a later window is not recorded.
inline uint64_t RangeStart(const char* name) noexcept {
  return internal::OpenWindow() ? rlprof_range_start(name) : 0;
}
inline void RangeEnd(uint64_t id) noexcept {
  if (id != 0 && internal::OpenWindow()) rlprof_range_end(id);
}

// A copy of `name` that lives until the process exits (deduplicated by content), for names
// built at run time: `rlprof::Mark(rlprof::InternName("batch " + std::to_string(i)))`.
inline const char* InternName(std::string_view name) {
  return rlprof_intern_name(std::string(name).c_str());
}

// Names the calling thread's track in captures written from now on.
inline void SetThreadName(const std::string& name) { rlprof_set_thread_name(name.c_str()); }

// A range on the current thread, recorded when it ends inside the window it began in.
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) noexcept : gen_(internal::OpenWindow()) {
    if (gen_) {
      name_ = name;
      t0_ = internal::ReadTicks();
    }
  }
  ~ScopedRange() {
    if (gen_) rlprof_emit_complete(gen_, name_, t0_, internal::ReadTicks());
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  uint32_t gen_;
  const char* name_ = nullptr;
  uint64_t t0_ = 0;
};

// ---- Sessions ----

// Who this process is. Resolved once per session from explicit options, else the launcher's
// environment (torchrun, Open MPI, PMI, Slurm).
struct Identity {
  int64_t rank = 0;
  int64_t local_rank = 0;
  int64_t world_size = 1;
  std::string host;
  int64_t pid = 0;
  std::vector<std::string> roles;  // the RL roles this process hosts (actor, rollout, ref, …)
  std::optional<int64_t> replica;
  std::string source = "default";  // where rank came from: explicit | torchrun | openmpi | pmi | slurm | default
  std::vector<std::string> warnings;  // environment values that could not be parsed
};

struct SessionOptions {
  std::optional<int64_t> rank;
  std::optional<int64_t> local_rank;
  std::optional<int64_t> world_size;
  std::optional<std::vector<std::string>> roles;  // else RLPROF_ROLES (comma list), else none
  std::optional<int64_t> replica;                 // else RLPROF_REPLICA
  std::string run_id;                             // else RLPROF_RUN_ID, else time + random
  bool install_signal_handlers = true;            // flush on SIGTERM / SIGINT, then chain
  bool allow_tsc = true;                          // false: CLOCK_MONOTONIC (also RLPROF_CLOCK=monotonic)
  bool quiet = false;                             // no "rlprof: capture …" info lines
};

namespace internal {

// The C options of `o`; `roles` is o.roles joined (it must outlive the result).
inline rlprof_options ToOptions(const SessionOptions& o, const std::string& roles) {
  rlprof_options c;
  rlprof_options_init(&c);
  if (o.rank) c.rank = *o.rank;
  if (o.local_rank) c.local_rank = *o.local_rank;
  if (o.world_size) c.world_size = *o.world_size;
  if (o.roles) c.roles = roles.c_str();
  if (o.replica) c.replica = *o.replica;
  if (!o.run_id.empty()) c.run_id = o.run_id.c_str();
  c.install_signal_handlers = o.install_signal_handlers ? 1 : 0;
  c.allow_tsc = o.allow_tsc ? 1 : 0;
  c.quiet = o.quiet ? 1 : 0;
  return c;
}

}  // namespace internal

class Session;

// Ends a stage when it goes out of scope (Session::Annotate / rlprof::Annotate).
class StageScope {
 public:
  StageScope() = default;
  StageScope(StageScope&& o) noexcept : session_(o.session_) { o.session_ = nullptr; }
  StageScope& operator=(StageScope&& o) noexcept {
    if (this != &o) {
      End();
      session_ = o.session_;
      o.session_ = nullptr;
    }
    return *this;
  }
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;
  ~StageScope() { End(); }
  void End() {
    if (session_ != nullptr) rlprof_session_stage_end(session_);
    session_ = nullptr;
  }

 private:
  friend class Session;
  friend StageScope Annotate(const std::string&, const std::string&, std::optional<config::SubStepKind>);
  explicit StageScope(rlprof_session* s) : session_(s) {}
  rlprof_session* session_ = nullptr;
};

// One profiled process's session: a handle of librlprof (rlprof_session), closed on
// destruction unless it is the default session's view (DefaultSession()).
class Session {
 public:
  // Loads a config (any supported dialect) with KEY=VALUE overrides. Returns null and sets
  // *error when the config cannot be loaded. Never fails for output problems: an unusable save
  // path disables the session (one warning on stderr).
  static std::unique_ptr<Session> CreateFromConfig(const std::string& path,
                                                   const std::vector<std::string>& overrides,
                                                   const SessionOptions& options = {},
                                                   std::string* error = nullptr) {
    return Open(path.c_str(), nullptr, overrides, options, error);
  }
  // The same from config text (YAML or JSON), named `origin` in error messages.
  static std::unique_ptr<Session> CreateFromText(const std::string& text,
                                                 const std::vector<std::string>& overrides = {},
                                                 const SessionOptions& options = {},
                                                 std::string* error = nullptr,
                                                 const std::string& origin = "<text>") {
    return Open(nullptr, &text, overrides, options, error, origin);
  }
  ~Session() {
    if (owned_) rlprof_session_close(s_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // True when this process may capture (plan selects it and the save path is usable).
  bool enabled() const { return rlprof_session_enabled(s_) != 0; }
  const Identity& identity() const { return id_; }
  const std::string& run_id() const { return run_id_; }
  // <save_path>/<run_id>, absolute.
  std::string run_dir() const { return run_dir_; }

  // RL step boundaries (steps are 1-based, as in the configs).
  void BeginStep(int64_t step) { rlprof_session_step_begin(s_, step); }
  void EndStep() { rlprof_session_step_end(s_); }
  // Stage boundaries: `role` is the role running the stage (actor, rollout, …). A stage window
  // follows the schedule the config gives its stage (docs/capture-windows.md, "Schedules");
  // `counts` is accepted for compatibility and ignored.
  StageScope Annotate(const std::string& role, const std::string& stage,
                      std::optional<config::SubStepKind> counts = std::nullopt) {
    BeginStage(role, stage, counts);
    return StageScope(s_);
  }
  void BeginStage(const std::string& role, const std::string& stage,
                  std::optional<config::SubStepKind> /*counts*/ = std::nullopt) {
    rlprof_session_stage_begin(s_, role.c_str(), stage.c_str());
  }
  void EndStage() { rlprof_session_stage_end(s_); }
  // One sub-step of `kind` finished (decode iteration, micro-batch, mini-batch): the schedule
  // of the open stage (or step) window counts those of its unit, whoever calls this.
  void SubStep(config::SubStepKind kind) { rlprof_session_sub_step(s_, internal::SubStepCode(kind)); }

  // Manual capture, independent of the config's selection: opens a window now (scope
  // `manual` unless given) and closes it on StopCapture. Returns false if a window is open
  // or the session is disabled.
  bool StartCapture(const std::string& scope = "manual") {
    return rlprof_session_capture_start(s_, scope.c_str()) == RLPROF_OK;
  }
  void StopCapture() { rlprof_session_capture_stop(s_); }

  // Blocks until every closed window, and what the open one holds so far, is on disk (bounded
  // by `timeout_s`); false on timeout.
  bool Flush(double timeout_s = 30.0) { return rlprof_session_flush(s_, timeout_s) == RLPROF_OK; }
  // Absolute directories of the captures finalised so far.
  std::vector<std::string> Captures() const {
    std::vector<std::string> out;
    const size_t n = rlprof_session_capture_count(s_);
    std::string buf(4096, '\0');
    for (size_t i = 0; i < n; ++i)
      if (rlprof_session_capture_dir(s_, i, buf.data(), buf.size()) == RLPROF_OK)
        out.emplace_back(buf.c_str());
    return out;
  }
  // Records this process's measured clock offset to rank 0 (added to local timestamps to put
  // them on rank 0's timeline) in the manifests written from now on (`offset_measured: true`).
  void SetClockOffsetToRank0(int64_t offset_ns) { rlprof_session_set_clock_offset(s_, offset_ns); }
  // Closes any open window (reason shutdown), writes everything, stops the writer thread.
  void Shutdown() { rlprof_session_shutdown(s_); }

  // The C handle (for code that mixes this API with rlprof.h).
  rlprof_session* handle() const { return s_; }

  // A non-owning view of a handle (the default session's).
  static std::unique_ptr<Session> View(rlprof_session* s) {
    return s == nullptr ? nullptr : std::unique_ptr<Session>(new Session(s, false));
  }

 private:
  Session(rlprof_session* s, bool owned) : s_(s), owned_(owned) { ReadInfo(); }

  static std::unique_ptr<Session> Open(const char* path, const std::string* text,
                                       const std::vector<std::string>& overrides,
                                       const SessionOptions& options, std::string* error,
                                       const std::string& origin = "<text>") {
    std::vector<const char*> ovr;
    for (const std::string& w : overrides) ovr.push_back(w.c_str());
    const std::string roles = options.roles ? internal::JoinCommas(*options.roles) : "";
    const rlprof_options c = internal::ToOptions(options, roles);
    rlprof_session* s = nullptr;
    const int rc = text != nullptr ? rlprof_session_open_text(text->c_str(), origin.c_str(), ovr.data(),
                                                              ovr.size(), &c, &s)
                                   : rlprof_session_open(path, ovr.data(), ovr.size(), &c, &s);
    if (rc != RLPROF_OK || s == nullptr) {
      if (error != nullptr) *error = rlprof_last_error();
      return nullptr;
    }
    return std::unique_ptr<Session>(new Session(s, true));
  }

  void ReadInfo() {
    rlprof_session_info info{};
    info.struct_size = sizeof info;
    if (rlprof_session_get_info(s_, &info) != RLPROF_OK) return;
    id_.rank = info.rank;
    id_.local_rank = info.local_rank;
    id_.world_size = info.world_size;
    id_.pid = info.pid;
    id_.host = info.host ? info.host : "";
    id_.roles = internal::SplitCommas(info.roles);
    if (info.replica >= 0) id_.replica = info.replica;
    id_.source = info.rank_source ? info.rank_source : "default";
    run_id_ = info.run_id ? info.run_id : "";
    run_dir_ = info.run_dir ? info.run_dir : "";
  }

  rlprof_session* s_ = nullptr;
  bool owned_ = true;
  Identity id_;
  std::string run_id_, run_dir_;
};

// ---- The process-global default session (what the free functions and the C API drive) ----

// Starts the default session from a config. False (and *error) when the config cannot be
// loaded or a default session already exists.
inline bool InitFromConfig(const std::string& path, const std::vector<std::string>& overrides = {},
                           const SessionOptions& options = {}, std::string* error = nullptr) {
  std::vector<const char*> ovr;
  for (const std::string& w : overrides) ovr.push_back(w.c_str());
  const std::string roles = options.roles ? internal::JoinCommas(*options.roles) : "";
  const rlprof_options c = internal::ToOptions(options, roles);
  if (rlprof_init_from_config(path.c_str(), ovr.data(), ovr.size(), &c) == RLPROF_OK) return true;
  if (error != nullptr) *error = rlprof_last_error();
  return false;
}

// A view of the default session (null when none). Valid until Shutdown().
inline Session* DefaultSession() {
  thread_local std::unique_ptr<Session> view;
  rlprof_session* s = rlprof_default_session();
  if (s == nullptr) return nullptr;
  if (view == nullptr || view->handle() != s) view = Session::View(s);
  return view.get();
}
// Shuts the default session down and forgets it (also runs at exit).
inline void Shutdown() { rlprof_shutdown(); }

inline void BeginStep(int64_t step) { rlprof_step_begin(step); }
inline void EndStep() { rlprof_step_end(); }
inline StageScope Annotate(const std::string& role, const std::string& stage,
                           std::optional<config::SubStepKind> /*counts*/ = std::nullopt) {
  rlprof_session* s = rlprof_default_session();
  if (s == nullptr || rlprof_session_stage_begin(s, role.c_str(), stage.c_str()) != RLPROF_OK)
    return StageScope();
  return StageScope(s);
}
inline void SubStep(config::SubStepKind kind) { rlprof_sub_step(internal::SubStepCode(kind)); }

}  // namespace rlprof

#define RLPROF_INTERNAL_CONCAT2_(a, b) a##b
#define RLPROF_INTERNAL_CONCAT_(a, b) RLPROF_INTERNAL_CONCAT2_(a, b)

#if defined(RLPROF_DISABLE)
#define RLPROF_RANGE(name)
#define RLPROF_MARK(name)
#define RLPROF_COUNTER(track, value)
#else
#define RLPROF_RANGE(name) \
  ::rlprof::ScopedRange RLPROF_INTERNAL_CONCAT_(rlprof_range_, __LINE__)(name)
#define RLPROF_MARK(name) ::rlprof::Mark(name)
#define RLPROF_COUNTER(track, value) ::rlprof::Counter(track, value)
#endif

#endif  // RLPROF_INCLUDE_RLPROF_RLPROF_HPP_
