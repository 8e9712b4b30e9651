// PyTorch operator capture: a global at::RecordFunction callback that records every aten op,
// autograd function and user `record_function` scope that runs while an rlprof capture window
// is open (docs/python.md). Operators become kOperator events (arg0 = autograd sequence
// number, arg1 = input shapes when asked); collectives (`c10d::*`, `gloo:*`, `nccl:*`,
// `record_param_comms`) become kCommunication events (arg0 = input bytes when inputs are
// recorded).
//
//   rlprof::sources::TorchOps& ops = rlprof::sources::TorchOps::Get();
//   ops.Sync(/*want=*/rlprof::Recording() && plan.contents.ops, /*shapes=*/plan.contents.shapes);
//   ... torch code ...             // recorded into the open window's per-thread buffers
//   ops.Sync(false, false);        // the callback is disabled: torch pays nothing for it
//
// The runtime is librlprof, reached through its C ABI (include/rlprof/rlprof.h): the Python
// package loads this hook as its own extension (rlprof._torch_ops, the only part that needs
// libtorch), linked to the same librlprof.so as the core extension, so one runtime records.
//
// Cost: outside windows the callback is disabled (torch's RecordFunction then does no work
// for it); call Sync() after every session call that may open or close a window. While
// enabled, each op costs the callback's enter/exit: two clock reads, a context object from a
// per-thread free list (no allocation in steady state), a per-thread name cache keyed by
// pointer and verified by content, and one 32-byte record; shapes formatting (into a reused
// per-thread buffer) only when shapes are on, which is also the only case in which torch is
// asked to hand over the inputs. A window that closes while the callback is still enabled
// (budget, backstop) is safe: the callback re-checks the open window on every op and records
// nothing.
//
// Thread-safety: Sync/Uninstall are serialised by an internal mutex; the callbacks run on every torch thread (autograd, gloo workers) and touch only
// thread-local state and relaxed atomics.
#ifndef RLPROF_SRC_SOURCES_TORCH_OPS_H_
#define RLPROF_SRC_SOURCES_TORCH_OPS_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

#include <cstring>

#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"

namespace rlprof::sources {

// True for operator / scope names that are collectives or point-to-point communication.
bool IsCommunicationOp(std::string_view name);

// What the callback does while enabled.
struct TorchOpsOptions {
  bool record = false;   // record operators (contents ops); off: only track the operator context
  bool shapes = false;   // input shapes (contents shapes)
  bool context = false;  // keep the innermost operator per thread (CurrentOperator; memory)
  bool stack = false;    // call the stack function for outermost operators (contents stack)
  // External correlation (device capture): each recorded synchronous operator pushes a fresh
  // id (rlprof_correlation_push) at its start and pops it at its end, so the device work
  // it launches carries the id (CUPTI: the launch's kRuntime event arg1); the operator's id is
  // recorded as a kCapture instant named "external_id" (arg0 = id) at the operator's ts on its
  // thread, which the capture reader pairs with the operator (Trace::external). Set it only
  // while a device source takes the ids (TorchOps::Correlating()).
  bool correlate = false;
  // The share of operator calls recorded (config `ops_sampling`), (0, 1]: below 1 the callback
  // is registered sampled (RecordFunctionCallback::samplingProb), so torch skips the
  // RecordFunction of a call not drawn altogether (its floor too); each call is drawn on its
  // own, nested calls included. Only with `record`: the operator context (memory) needs every
  // call.
  double sampling = 1.0;
  bool operator==(const TorchOpsOptions&) const = default;
};

// Returns the string id of the calling thread's current Python call stack (0: none, e.g. a
// thread without Python). Installed by the Python extension (python/src/torch_stack.cc); called
// at the start of each recorded operator that no other recorded operator on its thread encloses
// (or only `record_function` scopes do), so nested aten calls do not pay for it.
using StackFn = uint32_t (*)();

// String id of the innermost operator running on the calling thread while the callback tracks
// the operator context (TorchOpsOptions::context); 0 outside operators or when not tracked.
uint32_t CurrentOperator();

// The runtime's hot path for the torch sources (operators, memory, modules, stacks): librlprof's
// C ABI (include/rlprof/rlprof.h), the window and the clock read inline.
inline uint32_t RuntimeWindow() noexcept { return rlprof_window_inline(); }
inline uint64_t RuntimeTicks() noexcept { return rlprof_ticks_inline(); }
inline uint32_t RuntimeIntern(std::string_view s) { return rlprof_intern(s.data(), s.size()); }
// Records `e` (ticks; the track is filled in) on the calling thread if window `gen` is open.
inline void RuntimeEmit(uint32_t gen, const format::Event& e) noexcept {
  static_assert(sizeof(rlprof_event) == sizeof(format::Event), "rlprof_event mirrors format::Event");
  rlprof_event c;
  std::memcpy(&c, &e, sizeof c);
  rlprof_emit(gen, &c);
}

struct TorchOpsStats {
  uint64_t ops = 0;             // operators recorded
  uint64_t communication = 0;   // collectives recorded
  bool installed = false;       // the callback is registered with torch
  bool enabled = false;         // and currently enabled
  bool shapes = false;
  bool bound = false;           // the runtime is linked (always, with librlprof)
  uint64_t stacks = 0;          // stacks recorded
  uint64_t correlated = 0;      // operators that pushed an external correlation id
};

class TorchOps {
 public:
  static TorchOps& Get();

  // Enables the callback when `want` (registering it the first time, or again when `shapes`
  // changes), disables it otherwise. Cheap when nothing changes.
  void Sync(bool want, bool shapes);
  // The general form: enabled when `want` with these options (record = true in Sync()).
  void Configure(bool want, const TorchOpsOptions& options);
  // The stack function (before the first Configure with stack; never changed while enabled).
  void SetStackFunction(StackFn fn);
  // Waits (bounded) until every asynchronous scope that began in a window has ended. c10d
  // work (gloo:all_reduce, …) completes its future before it ends its RecordFunction on the
  // worker thread, so a window closing right after a collective would otherwise lose it.
  // Returns false on timeout (an op still really running).
  bool WaitForAsync(int64_t timeout_us);
  // Removes the callback from torch (e.g. at shutdown).
  void Uninstall();
  // Benchmarks only (bench/cost.py): registers (on) or removes (off) a second global callback
  // with the same scopes and options as the operator callback whose enter and exit do nothing,
  // so that torch's own RecordFunction cost with any callback — the floor an operator capture
  // cannot go below — is measured in the same run. Independent of Configure.
  // `scopes`: 0 = the operator callback's scopes, 1 = at::RecordScope::FUNCTION alone (what the
  // other scopes — autograd nodes, user scopes — add to the floor).
  void SetFloorCallback(bool on, int scopes = 0);
  TorchOpsStats stats() const;

  // Counters bumped by the callbacks.
  std::atomic<uint64_t> ops_recorded{0};
  std::atomic<uint64_t> comm_recorded{0};
  std::atomic<int64_t> async_in_flight{0};
  std::atomic<uint64_t> stacks_recorded{0};  // async scopes begun in a window, not yet ended
  std::atomic<uint64_t> correlated{0};       // operators that pushed an external id

  // True when the bound runtime has a device source taking external correlation ids.
  bool Correlating() const;

 private:
  TorchOps() = default;
  mutable std::mutex mu_;
  uint64_t handle_ = 0;  // at::CallbackHandle; 0 = not registered
  uint64_t floor_handle_ = 0;  // SetFloorCallback's
  bool enabled_ = false;
  TorchOpsOptions opt_;
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_TORCH_OPS_H_
