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
// Cost: outside a capture window every marker is one predictable branch on a relaxed atomic
// load; inside, a range is two clock reads plus one 32-byte store into a pre-faulted per-thread
// buffer, without locks or allocation (the first event of a thread in each window takes a
// short lock to attach a buffer). With RLPROF_DISABLE defined, the RLPROF_* macros compile to
// nothing.
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
// Faults: no function of this API throws. An unwritable or full save path, a writer thread that
// cannot start, or any unexpected error inside the runtime turns profiling off with one warning
// on stderr and the program goes on (docs/reliability.md). Only a config that cannot be loaded
// is reported to the caller (InitFromConfig / CreateFromConfig fail with the message).
#ifndef RLPROF_INCLUDE_RLPROF_RLPROF_HPP_
#define RLPROF_INCLUDE_RLPROF_RLPROF_HPP_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"

namespace rlprof {

namespace internal {

// The hot path's only shared state: one cache line, read with relaxed loads.
struct alignas(64) HotState {
  std::atomic<uint32_t> gen{0};      // generation of the open capture window; 0 = none
  std::atomic<uint32_t> use_tsc{0};  // 1: ticks are rdtsc, 0: CLOCK_MONOTONIC ns
};
extern HotState g_hot;

inline uint32_t OpenWindow() noexcept { return g_hot.gen.load(std::memory_order_relaxed); }

inline uint64_t ReadTicks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (g_hot.use_tsc.load(std::memory_order_relaxed)) return __builtin_ia32_rdtsc();
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Out-of-line recording; called only while a window is open.
void EmitComplete(uint32_t gen, const char* name, uint64_t t0, uint64_t t1) noexcept;
void EmitInstant(uint32_t gen, const char* name, uint64_t t) noexcept;
void EmitCounter(uint32_t gen, const char* name, double value, uint64_t t) noexcept;
uint64_t EmitBegin(uint32_t gen, const char* name, uint64_t t) noexcept;
void EmitEnd(uint32_t gen, uint64_t id, uint64_t t) noexcept;

}  // namespace internal

namespace runtime {
class SessionImpl;
}  // namespace runtime

// ---- Markers: record into the session that has a window open (no-ops otherwise). ----

// True while a capture window is open in this process.
inline bool Recording() noexcept { return internal::OpenWindow() != 0; }

// An instant event.
inline void Mark(const char* name) noexcept {
  if (const uint32_t g = internal::OpenWindow()) internal::EmitInstant(g, name, internal::ReadTicks());
}

// One sample of the counter series `track`.
inline void Counter(const char* track, double value) noexcept {
  if (const uint32_t g = internal::OpenWindow())
    internal::EmitCounter(g, track, value, internal::ReadTicks());
}

// A range that may end on another thread (mstx semantics). Returns 0 outside a window;
// RangeEnd(0) is a no-op. A range whose end falls in a later window is not recorded.
inline uint64_t RangeStart(const char* name) noexcept {
  if (const uint32_t g = internal::OpenWindow())
    return internal::EmitBegin(g, name, internal::ReadTicks());
  return 0;
}
inline void RangeEnd(uint64_t id) noexcept {
  if (id == 0) return;
  if (const uint32_t g = internal::OpenWindow()) internal::EmitEnd(g, id, internal::ReadTicks());
}

// A copy of `name` that lives until the process exits (deduplicated by content), for names
// built at run time: `rlprof::Mark(rlprof::InternName("batch " + std::to_string(i)))`.
const char* InternName(std::string_view name);

// Names the calling thread's track in captures written from now on.
void SetThreadName(const std::string& name);

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
    if (gen_) internal::EmitComplete(gen_, name_, t0_, internal::ReadTicks());
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  uint32_t gen_;
  const char* name_ = nullptr;
  uint64_t t0_ = 0;
};

// ---- Sessions ----

// Who this process is. Filled from SessionOptions, else from the launcher's environment
// (torchrun, Open MPI, PMI, Slurm; see docs/runtime.md), else rank 0 of 1.
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

class Session;

// An annotated stage call; the stage ends when this object is destroyed (or End() is called).
class StageScope {
 public:
  StageScope() = default;
  StageScope(StageScope&& o) noexcept : session_(o.session_) { o.session_ = nullptr; }
  StageScope& operator=(StageScope&& o) noexcept;
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;
  ~StageScope() { End(); }
  void End();

 private:
  friend class Session;
  explicit StageScope(Session* s) : session_(s) {}
  Session* session_ = nullptr;
};

class Session {
 public:
  // A session for `plan`. Never fails: when the plan selects nothing for this process, or
  // the save path is unusable (one warning on stderr), the session simply records nothing.
  // (Null only when memory is exhausted while allocating the session itself.)
  static std::unique_ptr<Session> Create(const config::Plan& plan, const SessionOptions& options = {});
  // Loads a config (any supported dialect) with KEY=VALUE overrides. Returns null and sets
  // *error when the config cannot be loaded.
  static std::unique_ptr<Session> CreateFromConfig(const std::string& path,
                                                   const std::vector<std::string>& overrides,
                                                   const SessionOptions& options = {},
                                                   std::string* error = nullptr);
  ~Session();  // Shutdown()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // True when this process may capture (plan selects it and the save path is usable).
  bool enabled() const;
  const Identity& identity() const;
  const std::string& run_id() const;
  // <save_path>/<run_id>, absolute.
  std::string run_dir() const;

  // RL step boundaries (steps are 1-based, as in the configs).
  void BeginStep(int64_t step);
  void EndStep();
  // Stage boundaries: `role` is the role running the stage (actor, rollout, …).
  // A stage window follows the schedule the config gives its stage (docs/capture-windows.md,
  // "Schedules"); `counts` is accepted for compatibility and ignored.
  StageScope Annotate(const std::string& role, const std::string& stage,
                      std::optional<config::SubStepKind> counts = std::nullopt);
  void BeginStage(const std::string& role, const std::string& stage,
                  std::optional<config::SubStepKind> counts = std::nullopt);
  void EndStage();
  // One sub-step of `kind` finished (decode iteration, micro-batch, mini-batch): the schedule
  // of the open stage (or step) window counts those of its unit, whoever calls this.
  void SubStep(config::SubStepKind kind);

  // Manual capture, independent of the config's selection: opens a window now (scope
  // `manual` unless given) and closes it on StopCapture. Returns false if a window is open
  // or the session is disabled.
  bool StartCapture(const std::string& scope = "manual");
  void StopCapture();

  // Blocks until every closed window, and what the open one holds so far, is on disk (bounded
  // by `timeout_s`); false on timeout.
  bool Flush(double timeout_s = 30.0);
  // Absolute directories of the captures finalised so far.
  std::vector<std::string> Captures() const;
  // Records this process's measured clock offset to rank 0 (added to local timestamps to put
  // them on rank 0's timeline) in the manifests written from now on (`offset_measured: true`).
  void SetClockOffsetToRank0(int64_t offset_ns);
  // Closes any open window (reason shutdown), writes everything, stops the writer thread.
  void Shutdown();

  runtime::SessionImpl* impl() { return impl_.get(); }

 private:
  explicit Session(std::unique_ptr<runtime::SessionImpl> impl);
  std::unique_ptr<runtime::SessionImpl> impl_;
};

// ---- The process-global default session (what the free functions below drive) ----

// Creates the default session (replacing none: returns false if one exists).
bool Init(const config::Plan& plan, const SessionOptions& options = {}, std::string* error = nullptr);
bool InitFromConfig(const std::string& path, const std::vector<std::string>& overrides = {},
                    const SessionOptions& options = {}, std::string* error = nullptr);
// The default session, or null.
Session* DefaultSession();
// Shuts the default session down and destroys it (also registered with atexit).
void Shutdown();

void BeginStep(int64_t step);
void EndStep();
StageScope Annotate(const std::string& role, const std::string& stage,
                    std::optional<config::SubStepKind> counts = std::nullopt);
void SubStep(config::SubStepKind kind);

}  // namespace rlprof

#define RLPROF_INTERNAL_CONCAT2_(a, b) a##b
#define RLPROF_INTERNAL_CONCAT_(a, b) RLPROF_INTERNAL_CONCAT2_(a, b)

#if defined(RLPROF_DISABLE)
#define RLPROF_RANGE(name)
#define RLPROF_MARK(name)
#define RLPROF_COUNTER(track, value)
#else
// A range from here to the end of the enclosing scope; `name` must be a string literal (or
// otherwise live until the session ends).
#define RLPROF_RANGE(name) \
  ::rlprof::ScopedRange RLPROF_INTERNAL_CONCAT_(rlprof_range_, __LINE__)(name)
#define RLPROF_MARK(name) ::rlprof::Mark(name)
#define RLPROF_COUNTER(track, value) ::rlprof::Counter(track, value)
#endif

#endif  // RLPROF_INCLUDE_RLPROF_RLPROF_HPP_
