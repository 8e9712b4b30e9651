// RuntimeLink: what a source in another shared object needs of the capture runtime — the open
// window, the clock, event emission and string interning — as plain pointers.
//
// Why: the Python package is two extensions, rlprof._rlprof (the runtime; no libtorch, so
// `import rlprof` is fast) and rlprof._torch_ops (the torch operator hook, loaded only when a
// config asks for operators). Each links its own static copy of the runtime's code, but only
// the core's copy ever has a window open, so the hook must record through the core's
// functions and state. The core hands this struct over in a PyCapsule; a C++ program (or a
// test) that links the runtime directly uses LocalRuntimeLink().
//
//   sources::TorchOps::Get().Bind(sources::LocalRuntimeLink());
//
// Thread-safety: the pointed-to functions are the runtime's hot-path entry points (any
// thread). LocalRuntimeLink() is inline so that only the programs that call it link the
// runtime.
#ifndef RLPROF_SRC_SOURCES_RUNTIME_LINK_H_
#define RLPROF_SRC_SOURCES_RUNTIME_LINK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rlprof/format/event.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/source.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::sources {

struct RuntimeLink {
  // Layout version and size: a link from an extension built with another layout is refused.
  static constexpr uint32_t kAbi = 2;
  uint32_t abi = kAbi;
  uint32_t size = sizeof(RuntimeLink);
  const std::atomic<uint32_t>* window_gen = nullptr;  // generation of the open window; 0 = none
  const std::atomic<uint32_t>* use_tsc = nullptr;     // 1: ticks are rdtsc, else CLOCK_MONOTONIC
  // Stores `e` (track filled in) in the calling thread's buffer of window `gen`.
  void (*emit)(uint32_t gen, const format::Event& e) noexcept = nullptr;
  // Id of `s` in the current session's string table.
  uint32_t (*intern)(std::string_view s) = nullptr;
  // External correlation (runtime::CorrelationActive / PushCorrelation / PopCorrelation of the
  // runtime that has the windows: a device source configured in that copy takes the ids).
  bool (*correlating)() noexcept = nullptr;
  void (*push_correlation)(uint64_t id) noexcept = nullptr;
  void (*pop_correlation)() noexcept = nullptr;
};

inline uint32_t InternInLocalRuntime(std::string_view s) {
  return runtime::Recorder::Get().interner().InternString(s);
}

// The runtime linked into this program.
inline RuntimeLink LocalRuntimeLink() {
  RuntimeLink l;
  l.window_gen = &internal::g_hot.gen;
  l.use_tsc = &internal::g_hot.use_tsc;
  l.emit = &runtime::EmitRecord;
  l.intern = &InternInLocalRuntime;
  l.correlating = &runtime::CorrelationActive;
  l.push_correlation = &runtime::PushCorrelation;
  l.pop_correlation = &runtime::PopCorrelation;
  return l;
}

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_RUNTIME_LINK_H_
