// rlprof._torch_ops: the PyTorch operator hook (src/sources/torch_ops.h) as its own extension,
// the only part of the package that links libtorch. Importing it (rlprof.torch, or a Profiler
// whose contents include ops) binds the hook to the core extension's runtime and registers
// the hook's switch with the core (python/src/torch_hooks.h).
//
// Thread-safety: import runs with the GIL held; the functions below may be called from any
// Python thread.
#include <pybind11/pybind11.h>

#include "python/src/torch_hooks.h"
#include "src/sources/runtime_link.h"
#include "src/sources/torch_ops.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

void Sync(bool want, bool shapes) { sources::TorchOps::Get().Sync(want, shapes); }
bool WaitForAsync(int64_t timeout_us) {
  return sources::TorchOps::Get().WaitForAsync(timeout_us);
}

py::dict Stats() {
  const sources::TorchOpsStats s = sources::TorchOps::Get().stats();
  py::dict d;
  d["ops"] = s.ops;
  d["communication"] = s.communication;
  d["installed"] = s.installed;
  d["enabled"] = s.enabled;
  d["shapes"] = s.shapes;
  d["bound"] = s.bound;
  return d;
}

}  // namespace
}  // namespace rlprof::python

PYBIND11_MODULE(_torch_ops, m) {
  using namespace rlprof::python;
  m.doc() = "rlprof's torch operator hook (use rlprof.torch)";
  py::module_ core = py::module_::import("rlprof._rlprof");
  PyObject* cap = core.attr("_runtime_link").ptr();
  auto* link = static_cast<const rlprof::sources::RuntimeLink*>(
      PyCapsule_GetPointer(cap, kRuntimeLinkCapsule));
  if (link == nullptr) throw py::error_already_set();
  if (!rlprof::sources::TorchOps::Get().Bind(*link))
    throw py::import_error("rlprof._torch_ops: rlprof._rlprof is from another rlprof build");
  static TorchOpsHooks hooks = [] {
    TorchOpsHooks h;
    h.sync = &Sync;
    h.wait_for_async = &WaitForAsync;
    return h;
  }();
  core.attr("_set_torch_ops")(py::capsule(&hooks, kTorchHooksCapsule));
  m.def("stats", &Stats,
        "Operators and collectives recorded so far, and the callback's state.");
}
