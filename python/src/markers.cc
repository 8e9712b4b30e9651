// Free marker functions of rlprof._rlprof: ranges, marks, counters, memory samples, and the
// link to the torch operator hook (python/src/torch_hooks.h). Outside a capture window every
// marker returns after one relaxed atomic load (the Python call itself, ~50 ns, dominates).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "python/src/bindings.h"
#include "python/src/torch_hooks.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"
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

// One registered torch source (torch_hooks.h): its kind and the session's torch contents.
struct TorchSource {
  uint32_t kind;
  const char* name;
  uint32_t wants;                 // RLPROF_CONTENTS_* bits it runs for
  std::atomic<uint32_t> contents; // TorchContent bits of the session (configure)
};
TorchSource g_sources[] = {
    {kTorchOps, "torch_ops",
     RLPROF_CONTENTS_OPS | RLPROF_CONTENTS_SHAPES | RLPROF_CONTENTS_STACK | RLPROF_CONTENTS_MEMORY, {0}},
    {kTorchMemory, "torch_memory", RLPROF_CONTENTS_MEMORY, {0}},
    {kTorchModule, "torch_module", RLPROF_CONTENTS_MODULE, {0}},
};

uint32_t TorchBits(uint32_t c) {
  uint32_t t = 0;
  if (c & (RLPROF_CONTENTS_OPS | RLPROF_CONTENTS_SHAPES | RLPROF_CONTENTS_STACK)) t |= kTorchOps;
  if (c & RLPROF_CONTENTS_SHAPES) t |= kTorchShapes;
  if (c & RLPROF_CONTENTS_STACK) t |= kTorchStack;
  if (c & RLPROF_CONTENTS_MEMORY) t |= kTorchMemory;
  if (c & RLPROF_CONTENTS_MODULE) t |= kTorchModule;
  return t;
}

void RegisterTorchSources() {
  for (TorchSource& ts : g_sources) {
    rlprof_source src;
    rlprof_source_init(&src);
    src.name = ts.name;
    src.contents = ts.wants;
    src.user = &ts;
    src.configure = [](void* u, uint32_t contents, const char*) {
      static_cast<TorchSource*>(u)->contents.store(TorchBits(contents));
      return 0;
    };
    src.start = [](void* u, uint32_t w) {
      auto* t = static_cast<TorchSource*>(u);
      g_torch->start(t->kind, t->contents.load(), w);
    };
    src.stop = [](void* u, uint32_t w) {
      auto* t = static_cast<TorchSource*>(u);
      g_torch->stop(t->kind, t->contents.load(), w);
    };
    if (ts.kind == kTorchOps) {
      // Collectives that finished but have not yet reported their end (c10d work ends on its
      // worker thread) get up to 5 ms before the window stops recording.
      src.flush = [](void*, uint32_t) { g_torch->wait_for_async(5000); };
    }
    src.counters = [](void* u, uint32_t w, rlprof_counter_add_fn add, void* ctx) {
      g_torch->counters(static_cast<TorchSource*>(u)->kind, w, add, ctx);
    };
    rlprof_register_source(&src);  // the name is free: registered once (g_torch set once)
  }
}

void SetTorchOps(py::capsule hooks) {
  auto* h = static_cast<const TorchOpsHooks*>(PyCapsule_GetPointer(hooks.ptr(), kTorchHooksCapsule));
  if (h == nullptr) throw py::error_already_set();
  if (h->abi != TorchOpsHooks::kAbi || h->size != sizeof(TorchOpsHooks))
    throw py::value_error("rlprof: rlprof._torch_ops is from another rlprof build");
  if (g_torch != nullptr) return;
  g_torch = h;
  RegisterTorchSources();
}

}  // namespace

void SyncTorchPython(bool recording, uint32_t contents) {
  if (g_torch != nullptr) g_torch->sync_python(recording, contents);
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
