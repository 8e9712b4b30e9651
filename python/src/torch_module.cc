// rlprof._torch_ops: the torch sources as their own extension, the only part of the package
// that links libtorch: operators and shapes (src/sources/torch_ops.h), Python call stacks of
// operators (python/src/torch_stack.cc), allocator events (src/sources/torch_memory.h) and
// nn.Module ranges (src/sources/torch_modules.h, driven by python/rlprof/torch.py's hooks).
// Importing it (rlprof.torch, or a Profiler whose contents include a torch content) binds the
// sources to the core extension's runtime and registers their switch with the core
// (python/src/torch_hooks.h).
//
// Thread-safety: import and Sync run with the GIL held; the functions below may be called from
// any Python thread.
#include <pybind11/pybind11.h>

#include "python/src/torch_hooks.h"
#include "python/src/torch_stack.h"
#include "rlprof/format/event.h"
#include "src/sources/runtime_link.h"
#include "src/sources/torch_memory.h"
#include "src/sources/torch_modules.h"
#include "src/sources/torch_ops.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

// The last state handed to Python (module hooks, warnings): Python is called on changes only.
bool g_last_recording = false;
uint32_t g_last_contents = 0;

void Sync(bool recording, uint32_t contents) {
  sources::TorchOpsOptions o;
  o.record = (contents & kTorchOps) != 0;
  o.shapes = (contents & kTorchShapes) != 0;
  o.stack = (contents & kTorchStack) != 0;
  o.context = (contents & kTorchMemory) != 0;  // the operator an allocation happens in
  const bool callback = o.record || o.context;
  sources::TorchOps::Get().Configure(recording && callback, o);
  if (contents & kTorchMemory) sources::TorchMemory::Get().Sync(recording);
  if (recording == g_last_recording && contents == g_last_contents) return;
  g_last_recording = recording;
  g_last_contents = contents;
  // Module hooks and the contents that cannot be honoured (python/rlprof/torch.py). A failure
  // there must not break the training step: it is reported and the hooks stay as they are.
  py::gil_scoped_acquire gil;
  try {
    py::module_::import("rlprof.torch").attr("_sync")(recording, contents);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("rlprof.torch._sync");
  }
}

bool WaitForAsync(int64_t timeout_us) {
  return sources::TorchOps::Get().WaitForAsync(timeout_us);
}

py::dict Stats() {
  const sources::TorchOpsStats s = sources::TorchOps::Get().stats();
  const sources::TorchMemoryStats m = sources::TorchMemory::Get().stats();
  py::dict d;
  d["ops"] = s.ops;
  d["communication"] = s.communication;
  d["installed"] = s.installed;
  d["enabled"] = s.enabled;
  d["shapes"] = s.shapes;
  d["bound"] = s.bound;
  d["stacks"] = s.stacks;
  d["allocations"] = m.events;
  d["out_of_memory"] = m.out_of_memory;
  d["memory_installed"] = m.installed;
  d["memory_active"] = m.active;
  d["memory_conflict"] = m.conflict;
  d["modules"] = sources::ModuleRanges::recorded();
  d["modules_dropped"] = sources::ModuleRanges::dropped();
  return d;
}

// Module hooks (python/rlprof/torch.py): `path` and `cls` are str; their UTF-8 is cached in the
// str object, so no copy is made.
std::string_view Utf8(py::handle s) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (p == nullptr) throw py::error_already_set();
  return {p, static_cast<size_t>(n)};
}

void ModuleEnter(uintptr_t key, py::handle path, py::handle cls) {
  sources::ModuleRanges::Enter(key, Utf8(path), Utf8(cls));
}

void ModuleExit(uintptr_t key) { sources::ModuleRanges::Exit(key); }

// A fact about the capture (a content that cannot be honoured, a snapshot written), recorded
// as a kCapture instant in the open window.
void Note(const std::string& text) {
  const sources::RuntimeLink& link = sources::BoundRuntime();
  const uint32_t gen = link.window_gen->load(std::memory_order_relaxed);
  if (gen == 0) return;
  format::Event e{};
  e.ts_ns = static_cast<int64_t>(sources::LinkedTicks());
  e.name = link.intern(text);
  e.kind = format::EventKind::kInstant;
  e.category = format::Category::kCapture;
  link.emit(gen, e);
}

}  // namespace
}  // namespace rlprof::python

PYBIND11_MODULE(_torch_ops, m) {
  using namespace rlprof::python;
  m.doc() = "rlprof's torch sources (use rlprof.torch)";
  py::module_ core = py::module_::import("rlprof._rlprof");
  PyObject* cap = core.attr("_runtime_link").ptr();
  auto* link = static_cast<const rlprof::sources::RuntimeLink*>(
      PyCapsule_GetPointer(cap, kRuntimeLinkCapsule));
  if (link == nullptr) throw py::error_already_set();
  if (!rlprof::sources::TorchOps::Get().Bind(*link))
    throw py::import_error("rlprof._torch_ops: rlprof._rlprof is from another rlprof build");
  rlprof::sources::TorchOps::Get().SetStackFunction(&CaptureStack);
  static TorchOpsHooks hooks = [] {
    TorchOpsHooks h;
    h.sync = &Sync;
    h.wait_for_async = &WaitForAsync;
    return h;
  }();
  m.def("stats", &Stats,
        "What the torch sources recorded so far (operators, collectives, stacks, allocator "
        "events, modules) and their state.");
  m.def("_module_enter", &ModuleEnter, py::arg("key"), py::arg("path"), py::arg("cls"));
  m.def("_module_exit", &ModuleExit, py::arg("key"));
  m.def("_note", &Note, py::arg("text"));
  m.def("_stack_depth", [] { return kStackDepth; });
  // Last: from here on the core switches the sources (and so calls rlprof.torch._sync).
  core.attr("_set_torch_ops")(py::capsule(&hooks, kTorchHooksCapsule));
}
