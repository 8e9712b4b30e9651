// Shared declarations of the rlprof._rlprof extension's translation units (python/src/).
// Thread-safety: see each function.
#ifndef RLPROF_PYTHON_SRC_BINDINGS_H_
#define RLPROF_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>

namespace rlprof::python {

void BindSession(pybind11::module_& m);
void BindMarkers(pybind11::module_& m);
void BindSamples(pybind11::module_& m);
// rlprof.annotate, a C type (annotate.cc), and _set_annotate_hooks.
void BindAnnotate(pybind11::module_& m);

// Switches the Python side of the torch sources (module hooks; contents that cannot be
// honoured; CUDA memory history) with the window: `contents` = TorchContent bits of
// python/src/torch_hooks.h. The C++ sources follow the windows through the runtime's Source
// seam by themselves. A no-op until rlprof._torch_ops is imported. Call with the GIL held.
void SyncTorchPython(bool recording, uint32_t contents);
// Samples process memory (RSS; the torch CPU allocator has no counters) into the open window
// as kMemory counters. A no-op outside windows. Thread-safe.
void EmitMemoryCounters();

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_BINDINGS_H_
