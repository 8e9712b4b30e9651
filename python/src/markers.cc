// Free marker functions of rlprof._rlprof: ranges, marks, counters, memory samples, and the
// link to the torch operator hook (python/src/torch_hooks.h). Outside a capture window every
// marker returns after one relaxed atomic load (the Python call itself, ~50 ns, dominates).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "python/src/bindings.h"
#include "python/src/torch_hooks.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.hpp"
#include "src/base/files.h"
#include "src/runtime/thread_buffer.h"
#include "src/sources/runtime_link.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

uint64_t RangeStartPy(const std::string& name) {
  if (!Recording()) return 0;
  return RangeStart(InternName(name));
}

void MarkPy(const std::string& name) {
  if (Recording()) Mark(InternName(name));
}

void CounterPy(const std::string& name, double value) {
  if (Recording()) Counter(InternName(name), value);
}

void EmitMemoryCounter(const std::string& name, double value) {
  const uint32_t gen = internal::OpenWindow();
  if (gen == 0) return;
  runtime::Record e{};
  e.ts_ns = static_cast<int64_t>(internal::ReadTicks());
  e.name = runtime::Recorder::Get().interner().InternString(name);
  e.kind = format::EventKind::kCounter;
  e.category = format::Category::kMemory;
  e.set_counter_value(value);
  runtime::EmitRecord(gen, e);
}

// Set once, when rlprof._torch_ops is imported (with the GIL held), and never changed: the
// extension is never unloaded.
const TorchOpsHooks* g_torch = nullptr;

void SetTorchOps(py::capsule hooks) {
  auto* h = static_cast<const TorchOpsHooks*>(PyCapsule_GetPointer(hooks.ptr(), kTorchHooksCapsule));
  if (h == nullptr) throw py::error_already_set();
  if (h->abi != TorchOpsHooks::kAbi || h->size != sizeof(TorchOpsHooks))
    throw py::value_error("rlprof: rlprof._torch_ops is from another rlprof build");
  g_torch = h;
}

}  // namespace

void SyncTorchOps(bool recording, uint32_t contents) {
  if (g_torch != nullptr) g_torch->sync(recording, contents);
}

void WaitForTorchAsync(int64_t timeout_us) {
  if (g_torch != nullptr) g_torch->wait_for_async(timeout_us);
}

bool TorchOpsLoaded() { return g_torch != nullptr; }

void EmitMemoryCounters() {
  if (!Recording()) return;
  const int64_t rss = base::ResidentSetBytes();
  if (rss >= 0) EmitMemoryCounter("rss_bytes", static_cast<double>(rss));
}

void BindMarkers(py::module_& m) {
  m.def("recording", &Recording, "True while a capture window is open in this process.");
  m.def("range_start", &RangeStartPy, py::arg("name"));
  m.def("range_end", &RangeEnd, py::arg("range_id"));
  m.def("mark", &MarkPy, py::arg("name"));
  m.def("counter", &CounterPy, py::arg("name"), py::arg("value"));
  m.def("memory_counter", &EmitMemoryCounter, py::arg("name"), py::arg("value"));
  m.def("sample_memory", &EmitMemoryCounters);
  m.def("set_thread_name", &SetThreadName, py::arg("name"));
  // The torch operator hook's side of python/src/torch_hooks.h.
  static const sources::RuntimeLink link = sources::LocalRuntimeLink();
  m.attr("_runtime_link") =
      py::capsule(static_cast<const void*>(&link), kRuntimeLinkCapsule);
  m.def("_set_torch_ops", &SetTorchOps, py::arg("hooks"));
  m.def("_torch_ops_loaded", &TorchOpsLoaded);
}

}  // namespace rlprof::python
