// Free marker functions of rlprof._rlprof: ranges, marks, counters, memory samples, and the
// torch sources' switch (python/src/torch_hooks.h). Everything goes through librlprof's C ABI
// (include/rlprof/rlprof.h). Outside a capture window every marker returns after one relaxed
// load (the Python call itself, ~50 ns, dominates).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "python/src/bindings.h"
#include "python/src/torch_hooks.h"
#include "rlprof/rlprof.h"
#include "rlprof/rlprof.hpp"

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

constexpr uint8_t kCategoryMemory = 10;  // format::Category::kMemory (rlprof.h's event layout)

void EmitMemoryCounter(const std::string& name, double value) {
  const uint32_t gen = rlprof_window_inline();
  if (gen == 0) return;
  rlprof_event e;
  std::memset(&e, 0, sizeof e);
  e.ts = static_cast<int64_t>(rlprof_ticks_inline());
  e.name = rlprof_intern(name.data(), name.size());
  e.kind = RLPROF_EVENT_COUNTER;
  e.category = kCategoryMemory;
  std::memcpy(&e.payload, &value, sizeof value);
  rlprof_emit(gen, &e);
}

// The resident set size from /proc/self/statm (-1 where there is none).
int64_t ResidentSetBytes() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) return -1;
  return static_cast<int64_t>(resident) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// rlprof._torch_ops's switch of its Python side (module hooks, contents not honoured, CUDA
// memory history): set once when it is imported (GIL held), never cleared (the extension is
// never unloaded). Null until then.
PyObject* g_torch_sync = nullptr;

void SetTorchSync(py::object fn) {
  if (g_torch_sync != nullptr) return;
  g_torch_sync = fn.release().ptr();
}

}  // namespace

void SyncTorchPython(bool recording, uint32_t contents) {
  if (g_torch_sync == nullptr) return;
  // A failure there must not break the training step: reported, the hooks stay as they are.
  try {
    py::handle fn(g_torch_sync);
    fn(recording, contents);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("rlprof._torch_ops sync");
  }
}

bool TorchOpsLoaded() { return g_torch_sync != nullptr; }

void EmitMemoryCounters() {
  if (!Recording()) return;
  const int64_t rss = ResidentSetBytes();
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
  // rlprof._torch_ops registers its sources with librlprof itself; it hands the core only the
  // Python-side switch, called after each session call (torch_hooks.h).
  m.def("_set_torch_sync", &SetTorchSync, py::arg("fn"));
  m.def("_torch_ops_loaded", &TorchOpsLoaded);
}

}  // namespace rlprof::python
