// The contract between rlprof's two Python extensions: the core (rlprof._rlprof, the runtime)
// and the torch sources (rlprof._torch_ops: operators, stacks, memory, modules, the only part that links libtorch, loaded
// only when a config asks for operators so that `import rlprof` stays fast).
//
//   core  --capsule "rlprof._rlprof.runtime_link" (sources::RuntimeLink)-->  torch extension
//   torch extension --_rlprof._set_torch_ops(capsule "rlprof._torch_ops.hooks")-->  core
//
// The core then switches operator capture with the capture windows through TorchOpsHooks.
// Thread-safety: the hooks are set once, with the GIL held, when rlprof._torch_ops is imported.
#ifndef RLPROF_PYTHON_SRC_TORCH_HOOKS_H_
#define RLPROF_PYTHON_SRC_TORCH_HOOKS_H_

#include <cstdint>

namespace rlprof::python {

inline constexpr const char kRuntimeLinkCapsule[] = "rlprof._rlprof.runtime_link";
inline constexpr const char kTorchHooksCapsule[] = "rlprof._torch_ops.hooks";

// The torch contents a session selected, as bits for TorchOpsHooks::sync.
enum TorchContent : uint32_t {
  kTorchOps = 1u << 0,
  kTorchShapes = 1u << 1,
  kTorchStack = 1u << 2,
  kTorchMemory = 1u << 3,
  kTorchModule = 1u << 4,
};

// The torch sources register with the runtime's Source seam (include/rlprof/rlprof.h,
// rlprof_register_source) from the core extension, one per kind below, each forwarding its
// lifecycle to these functions of rlprof._torch_ops:
//   torch_ops    (kTorchOps;    contents ops, shapes, stack, memory): the operator callback
//   torch_memory (kTorchMemory; contents memory): the allocator reporter
//   torch_module (kTorchModule; contents module): counters (the hooks are Python, below)
// start / stop run on the thread driving the session with its lock held (no GIL needed, none
// taken); sync_python switches the Python side (module hooks, contents that cannot be
// honoured, CUDA memory history) after each session call, with the GIL held.
struct TorchOpsHooks {
  static constexpr uint32_t kAbi = 3;
  uint32_t abi = kAbi;
  uint32_t size = sizeof(TorchOpsHooks);
  void (*start)(uint32_t kind, uint32_t contents, uint32_t window) = nullptr;
  void (*stop)(uint32_t kind, uint32_t contents, uint32_t window) = nullptr;
  bool (*wait_for_async)(int64_t timeout_us) = nullptr;   // sources::TorchOps::WaitForAsync
  // The window's counts of source `kind` for manifest.json sources.<name> (writer thread).
  void (*counters)(uint32_t kind, uint32_t window, void (*add)(void*, const char*, int64_t),
                   void* ctx) = nullptr;
  void (*sync_python)(bool recording, uint32_t contents) = nullptr;
};

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_TORCH_HOOKS_H_
