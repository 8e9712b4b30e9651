// What rlprof's two Python extensions share about the torch sources: the core
// (rlprof._rlprof, the session) and the torch sources (rlprof._torch_ops: operators, stacks,
// memory, modules; the only part that links libtorch, loaded only when a config asks for a
// torch content so that `import rlprof` stays fast). Both link librlprof.so, the one runtime:
//
//   rlprof._torch_ops, at import: rlprof_register_source() for torch_ops (contents ops,
//     shapes, stack, memory), torch_memory (memory) and torch_module (module); their
//     start / stop follow the capture windows through librlprof's Source seam by themselves.
//   rlprof._torch_ops --_rlprof._set_torch_sync(fn)--> core: the core calls fn(recording,
//     contents) with the GIL held after each session call, to switch the Python side (module
//     hooks, contents that cannot be honoured, CUDA memory history).
//
// Thread-safety: the switch is set once, with the GIL held, when rlprof._torch_ops is imported.
#ifndef RLPROF_PYTHON_SRC_TORCH_HOOKS_H_
#define RLPROF_PYTHON_SRC_TORCH_HOOKS_H_

#include <cstdint>

namespace rlprof::python {

// The torch contents a session selected, as bits for the switch (`contents` above).
enum TorchContent : uint32_t {
  kTorchOps = 1u << 0,
  kTorchShapes = 1u << 1,
  kTorchStack = 1u << 2,
  kTorchMemory = 1u << 3,
  kTorchModule = 1u << 4,
};

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_TORCH_HOOKS_H_
