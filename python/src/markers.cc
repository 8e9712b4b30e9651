// Free marker functions of rlprof._rlprof: ranges, marks, counters, memory samples, and the
// torch operator hook's switch. Outside a capture window every marker returns after one
// relaxed atomic load (the Python call itself, ~50 ns, dominates).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "python/src/bindings.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/thread_buffer.h"
#if defined(RLPROF_HAVE_TORCH_OPS)
#include "src/sources/torch_ops.h"
#endif

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

long RssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

py::dict TorchOpsStatsPy() {
  py::dict d;
#if defined(RLPROF_HAVE_TORCH_OPS)
  const sources::TorchOpsStats s = sources::TorchOps::Get().stats();
  d["available"] = true;
  d["ops"] = s.ops;
  d["communication"] = s.communication;
  d["installed"] = s.installed;
  d["enabled"] = s.enabled;
  d["shapes"] = s.shapes;
#else
  d["available"] = false;
#endif
  return d;
}

}  // namespace

void SyncTorchOps(bool want, bool shapes) {
#if defined(RLPROF_HAVE_TORCH_OPS)
  sources::TorchOps::Get().Sync(want, shapes);
#endif
}

void WaitForTorchAsync(int64_t timeout_us) {
#if defined(RLPROF_HAVE_TORCH_OPS)
  sources::TorchOps::Get().WaitForAsync(timeout_us);
#endif
}

void EmitMemoryCounters() {
  if (!Recording()) return;
  const long rss = RssBytes();
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
  m.def("torch_ops_stats", &TorchOpsStatsPy);
#if defined(RLPROF_HAVE_TORCH_OPS)
  m.attr("HAVE_TORCH_OPS") = true;
#else
  m.attr("HAVE_TORCH_OPS") = false;
#endif
}

}  // namespace rlprof::python
