// rlprof._torch_ops: the torch sources as their own extension, the only part of the package
// that links libtorch: operators and shapes (src/sources/torch_ops.h), Python call stacks of
// operators (python/src/torch_stack.cc), allocator events (src/sources/torch_memory.h) and
// nn.Module ranges (src/sources/torch_modules.h, driven by python/rlprof/torch.py's hooks).
// Importing it (rlprof.torch, or a Profiler whose contents include a torch content) registers
// the sources with librlprof (the runtime the core extension's session drives) and hands the
// core the switch of their Python side (python/src/torch_hooks.h).
//
// Thread-safety: import and Sync run with the GIL held; the functions below may be called from
// any Python thread.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <map>
#include <mutex>

#include "python/src/torch_hooks.h"
#include "python/src/torch_stack.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"
#include "src/sources/torch_memory.h"
#include "src/sources/torch_modules.h"
#include "src/sources/torch_ops.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

// The last state handed to Python (module hooks, warnings): Python is called on changes only.
bool g_last_recording = false;
uint32_t g_last_contents = 0;

// Counts at a window's start, and each stopped window's counts for its manifest.
struct Counts {
  uint64_t ops = 0, communication = 0, stacks = 0, allocations = 0, oom = 0, modules = 0,
           modules_dropped = 0;
};
Counts Now() {
  Counts c;
  const sources::TorchOps& o = sources::TorchOps::Get();
  c.ops = o.ops_recorded.load(std::memory_order_relaxed);
  c.communication = o.comm_recorded.load(std::memory_order_relaxed);
  c.stacks = o.stacks_recorded.load(std::memory_order_relaxed);
  const sources::TorchMemory& m = sources::TorchMemory::Get();
  c.allocations = m.events.load(std::memory_order_relaxed);
  c.oom = m.oom.load(std::memory_order_relaxed);
  c.modules = sources::ModuleRanges::recorded();
  c.modules_dropped = sources::ModuleRanges::dropped();
  return c;
}
struct WindowCounts {
  Counts counts;
  bool memory_conflict = false;  // torch.profiler held the allocator reporting
};
std::mutex g_counts_mu;
Counts g_at_start[3];                          // by source index
std::map<uint32_t, WindowCounts> g_windows[3];  // window -> counts (erased when read)
std::atomic<uint32_t> g_not_honoured{0};       // TorchContent bits Python found unhonourable

int Index(uint32_t kind) { return kind == kTorchOps ? 0 : kind == kTorchMemory ? 1 : 2; }

// The sources' start / stop (librlprof's Source seam: the training thread, session lock held;
// no GIL).
void Start(uint32_t kind, uint32_t contents, double ops_sampling, uint32_t /*window*/) {
  if (kind == kTorchOps) {
    sources::TorchOpsOptions o;
    o.record = (contents & kTorchOps) != 0;
    if (o.record) o.sampling = ops_sampling;
    o.shapes = (contents & kTorchShapes) != 0;
    o.stack = (contents & kTorchStack) != 0;
    o.context = (contents & kTorchMemory) != 0;  // the operator an allocation happens in
    // Device capture: operators push external correlation ids (the core's runtime; nothing
    // on the CPU-only path).
    o.correlate = o.record && sources::TorchOps::Get().Correlating();
    sources::TorchOps::Get().Configure(o.record || o.context, o);
  } else if (kind == kTorchMemory) {
    sources::TorchMemory::Get().Sync(true);  // false: another reporter holds it (stats)
  }
  std::lock_guard<std::mutex> lock(g_counts_mu);
  g_at_start[Index(kind)] = Now();
}

void Stop(uint32_t kind, uint32_t /*contents*/, uint32_t window) {
  if (kind == kTorchOps) sources::TorchOps::Get().Configure(false, {});
  bool conflict = false;
  if (kind == kTorchMemory) {
    conflict = sources::TorchMemory::Get().stats().conflict;
    sources::TorchMemory::Get().Sync(false);
  }
  const Counts now = Now();
  std::lock_guard<std::mutex> lock(g_counts_mu);
  const Counts& a = g_at_start[Index(kind)];
  WindowCounts w;
  w.counts.ops = now.ops - a.ops;
  w.counts.communication = now.communication - a.communication;
  w.counts.stacks = now.stacks - a.stacks;
  w.counts.allocations = now.allocations - a.allocations;
  w.counts.oom = now.oom - a.oom;
  w.counts.modules = now.modules - a.modules;
  w.counts.modules_dropped = now.modules_dropped - a.modules_dropped;
  w.memory_conflict = conflict;
  auto& m = g_windows[Index(kind)];
  if (m.size() > 64) m.erase(m.begin());  // windows never finalised (a killed writer)
  m[window] = w;
}

void Counters(uint32_t kind, uint32_t window, void (*add)(void*, const char*, int64_t), void* ctx) {
  WindowCounts w;
  {
    std::lock_guard<std::mutex> lock(g_counts_mu);
    auto& m = g_windows[Index(kind)];
    auto it = m.find(window);
    if (it == m.end()) return;
    w = it->second;
    m.erase(it);
  }
  const Counts& c = w.counts;
  auto put = [&](const char* k, uint64_t v) { add(ctx, k, static_cast<int64_t>(v)); };
  const uint32_t nh = g_not_honoured.load(std::memory_order_relaxed);
  if (kind == kTorchOps) {
    put("operators", c.ops);
    put("collectives", c.communication);
    put("stacks", c.stacks);
  } else if (kind == kTorchMemory) {
    put("allocator_events", c.allocations);
    put("out_of_memory", c.oom);
    // Contents that could not be honoured, and why (docs/config.md): 1 = not recorded.
    put("not_honoured_device_memory_no_cuda", (nh & kTorchMemory) ? 1 : 0);
    put("not_honoured_torch_profiler_holds_allocator", w.memory_conflict ? 1 : 0);
  } else {
    put("modules", c.modules);
    put("modules_end_missed", c.modules_dropped);
    put("not_honoured_no_global_module_hooks", (nh & kTorchModule) ? 1 : 0);
  }
}

// The Python side (python/rlprof/torch.py: module hooks, contents not honoured, CUDA history),
// with the GIL held, after each session call (the core calls it: _rlprof._set_torch_sync).
void SyncPython(bool recording, uint32_t contents) {
  if (recording == g_last_recording && contents == g_last_contents) return;
  g_last_recording = recording;
  g_last_contents = contents;
  // A failure there must not break the training step: it is reported, the hooks stay as are.
  try {
    py::object nh = py::module_::import("rlprof.torch").attr("_sync")(recording, contents);
    if (!nh.is_none()) g_not_honoured.store(nh.cast<uint32_t>(), std::memory_order_relaxed);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("rlprof.torch._sync");
  }
}

// One registered torch source: its kind and the session's torch contents.
struct TorchSource {
  uint32_t kind;
  const char* name;
  uint32_t wants;                  // RLPROF_CONTENTS_* bits it runs for
  std::atomic<uint32_t> contents;  // TorchContent bits of the session (configure)
  std::atomic<double> ops_sampling;  // the session's ops_sampling (configure)
};
TorchSource g_sources[] = {
    {kTorchOps, "torch_ops",
     RLPROF_CONTENTS_OPS | RLPROF_CONTENTS_SHAPES | RLPROF_CONTENTS_STACK | RLPROF_CONTENTS_MEMORY, {0}, {1.0}},
    {kTorchMemory, "torch_memory", RLPROF_CONTENTS_MEMORY, {0}, {1.0}},
    {kTorchModule, "torch_module", RLPROF_CONTENTS_MODULE, {0}, {1.0}},
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

// Registers the three sources with librlprof (once: the extension is imported once).
void RegisterSources() {
  for (TorchSource& ts : g_sources) {
    rlprof_source src;
    rlprof_source_init(&src);
    src.name = ts.name;
    src.contents = ts.wants;
    src.user = &ts;
    src.configure_with = [](void* u, const rlprof_source_config* c) {
      auto* t = static_cast<TorchSource*>(u);
      t->contents.store(TorchBits(c->contents));
      t->ops_sampling.store(c->ops_sampling);
      return 0;
    };
    src.start = [](void* u, uint32_t w) {
      auto* t = static_cast<TorchSource*>(u);
      Start(t->kind, t->contents.load(), t->ops_sampling.load(), w);
    };
    src.stop = [](void* u, uint32_t w) {
      auto* t = static_cast<TorchSource*>(u);
      Stop(t->kind, t->contents.load(), w);
    };
    if (ts.kind == kTorchOps) {
      // Collectives that finished but have not yet reported their end (c10d work ends on its
      // worker thread) get up to 5 ms before the window stops recording.
      src.flush = [](void*, uint32_t) { sources::TorchOps::Get().WaitForAsync(5000); };
    }
    src.counters = [](void* u, uint32_t w, rlprof_counter_add_fn add, void* ctx) {
      Counters(static_cast<TorchSource*>(u)->kind, w, add, ctx);
    };
    rlprof_register_source(&src);  // RLPROF_ERROR_STATE: already registered (a re-import)
  }
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
  d["correlated"] = s.correlated;  // operators that pushed an external correlation id
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
// _module_enter(module, path, cls) / _module_exit(module): METH_FASTCALL (no argument
// conversion layer: they run twice per module forward). The module object's address is its
// identity while it runs.
PyObject* ModuleEnter(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (n != 3 || !PyUnicode_Check(args[1]) || !PyUnicode_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "_module_enter(module, path: str, cls: str)");
    return nullptr;
  }
  Py_ssize_t pn = 0, cn = 0;
  const char* p = PyUnicode_AsUTF8AndSize(args[1], &pn);
  const char* c = p != nullptr ? PyUnicode_AsUTF8AndSize(args[2], &cn) : nullptr;
  if (c == nullptr) return nullptr;
  sources::ModuleRanges::Enter(reinterpret_cast<uintptr_t>(args[0]),
                               std::string_view(p, static_cast<size_t>(pn)),
                               std::string_view(c, static_cast<size_t>(cn)));
  Py_RETURN_NONE;
}

PyObject* ModuleExit(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (n != 1) {
    PyErr_SetString(PyExc_TypeError, "_module_exit(module)");
    return nullptr;
  }
  sources::ModuleRanges::Exit(reinterpret_cast<uintptr_t>(args[0]));
  Py_RETURN_NONE;
}

PyMethodDef kModuleEnterDef = {"_module_enter", reinterpret_cast<PyCFunction>(
                                   reinterpret_cast<void (*)()>(&ModuleEnter)),
                               METH_FASTCALL, "A module's forward begins (rlprof.torch hooks)."};
PyMethodDef kModuleExitDef = {"_module_exit", reinterpret_cast<PyCFunction>(
                                  reinterpret_cast<void (*)()>(&ModuleExit)),
                              METH_FASTCALL, "A module's forward ended (rlprof.torch hooks)."};

// A fact about the capture (a content that cannot be honoured, a snapshot written), recorded
// as a kCapture instant in the open window.
void Note(const std::string& text) {
  const uint32_t gen = sources::RuntimeWindow();
  if (gen == 0) return;
  format::Event e{};
  e.ts_ns = static_cast<int64_t>(sources::RuntimeTicks());
  e.name = sources::RuntimeIntern(text);
  e.kind = format::EventKind::kInstant;
  e.category = format::Category::kCapture;
  sources::RuntimeEmit(gen, e);
}

}  // namespace
}  // namespace rlprof::python

PYBIND11_MODULE(_torch_ops, m) {
  using namespace rlprof::python;
  m.doc() = "rlprof's torch sources (use rlprof.torch)";
  py::module_ core = py::module_::import("rlprof._rlprof");
  rlprof::sources::TorchOps::Get().SetStackFunction(&CaptureStack);
  m.def("stats", &Stats,
        "What the torch sources recorded so far (operators, collectives, stacks, allocator "
        "events, modules) and their state.");
  m.add_object("_module_enter",
               py::reinterpret_steal<py::object>(PyCFunction_NewEx(&kModuleEnterDef, nullptr, nullptr)));
  m.add_object("_module_exit",
               py::reinterpret_steal<py::object>(PyCFunction_NewEx(&kModuleExitDef, nullptr, nullptr)));
  m.def("_note", &Note, py::arg("text"));
  m.def("_floor_callback",
        [](bool on, int scopes) { rlprof::sources::TorchOps::Get().SetFloorCallback(on, scopes); },
        py::arg("on"), py::arg("scopes") = 0,
        "Benchmarks only: a global RecordFunction callback that does nothing, with the operator "
        "callback's scopes (torch's own floor for any operator capture; bench/cost.py).");
  m.def("_stack_depth", [] { return kStackDepth; });
  m.def("_set_framework_roots", &SetFrameworkRoots, py::arg("roots"),
        "(label, directory) pairs: stack frames under them are recorded as \"[label] ...\"");
  m.def("_sync_python", &SyncPython, py::arg("recording"), py::arg("contents"));
  // Last: from here on the runtime switches the sources, and the core their Python side.
  RegisterSources();
  core.attr("_set_torch_sync")(m.attr("_sync_python"));
}
