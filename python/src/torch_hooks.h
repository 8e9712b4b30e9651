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

struct TorchOpsHooks {
  static constexpr uint32_t kAbi = 2;
  uint32_t abi = kAbi;
  uint32_t size = sizeof(TorchOpsHooks);
  // Switches every torch source with the window: `recording` = a window is open and the
  // session enabled; `contents` = TorchContent bits. Called with the GIL held.
  void (*sync)(bool recording, uint32_t contents) = nullptr;
  bool (*wait_for_async)(int64_t timeout_us) = nullptr;   // sources::TorchOps::WaitForAsync
};

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_TORCH_HOOKS_H_
