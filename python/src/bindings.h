// Shared declarations of the rlprof._rlprof extension's translation units (python/src/).
// Thread-safety: see each function.
#ifndef RLPROF_PYTHON_SRC_BINDINGS_H_
#define RLPROF_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <cstdint>

namespace rlprof::python {

void BindSession(pybind11::module_& m);
void BindMarkers(pybind11::module_& m);
// rlprof.annotate, a C type (annotate.cc), and _set_annotate_hooks.
void BindAnnotate(pybind11::module_& m);

// Switches the torch sources (operators, shapes, stack, memory, module: TorchContent bits of
// python/src/torch_hooks.h) with the window (a no-op until rlprof._torch_ops is imported).
// Call with the GIL held.
void SyncTorchOps(bool recording, uint32_t contents);
// Waits up to `timeout_us` for asynchronous torch scopes (collectives) begun in the window to
// end (a no-op until rlprof._torch_ops is imported). Thread-safe; the GIL is not needed.
void WaitForTorchAsync(int64_t timeout_us);
// Samples process memory (RSS; the torch CPU allocator has no counters) into the open window
// as kMemory counters. A no-op outside windows. Thread-safe.
void EmitMemoryCounters();

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_BINDINGS_H_
