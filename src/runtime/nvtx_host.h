// The hand-over between a capture runtime and rlprof's NVTX injection library
// (librlprof_nvtx.so, src/sources/nvtx_injection.cc).
//
// NVTX dlopens the library named by NVTX_INJECTION64_PATH at a process's first NVTX call. The
// library carries its own copy of the runtime, used when nothing else in the process records
// (a C++ program that never heard of rlprof: the library starts a session from RLPROF_CONFIG
// and turns NVTX "step" / stage ranges into steps and stages). When the process has its own
// rlprof session — the Python package, or a C++ program linking rlprof — that runtime hands
// its entry points to the library (AttachNvtxInjection, at session start or import), and the
// library records NVTX ranges, marks and domains there instead; steps and stages then come
// from the host's own calls (its session-control pointers are null).
//
//   runtime::AttachNvtxInjection();   // no-op unless NVTX_INJECTION64_PATH names rlprof's library
//
// Thread-safety: AttachNvtxInjection may be called from any thread, more than once.
#ifndef RLPROF_SRC_RUNTIME_NVTX_HOST_H_
#define RLPROF_SRC_RUNTIME_NVTX_HOST_H_

#include <cstddef>
#include <cstdint>

#include "rlprof/rlprof.h"

extern "C" {

// A table of C API entry points of one runtime copy. Layout versioned: fields are only added
// at the end (size says which are present).
struct rlprof_nvtx_host {
  uint32_t abi;   // kRlprofNvtxHostAbi
  uint32_t size;  // sizeof(rlprof_nvtx_host) of the caller
  uint32_t (*window)(void);
  uint64_t (*ticks)(void);
  uint32_t (*intern)(const char* s, size_t n);
  int (*emit)(uint32_t window, const rlprof_event* e);
  int (*emit_track)(uint32_t window, const rlprof_event* e);
  uint16_t (*track)(int kind, uint64_t os_id, const char* name);
  int (*register_source)(const rlprof_source* source);
  int (*unregister_source)(const char* name);
  void (*set_thread_name)(const char* name);
  // Session control; null when the host drives steps and stages itself.
  int (*step_begin)(int64_t step);
  int (*step_end)(void);
  int (*stage_begin)(const char* role, const char* stage);
  int (*stage_end)(void);
};

// Exported by librlprof_nvtx.so: switch to `host` (copied). 0 = attached.
typedef int (*rlprof_nvtx_attach_fn)(const rlprof_nvtx_host* host);
}

namespace rlprof::runtime {

inline constexpr uint32_t kRlprofNvtxHostAbi = 1;

// This runtime copy's entry points. `control`: include the session-control pointers.
rlprof_nvtx_host LocalNvtxHost(bool control);

// When NVTX_INJECTION64_PATH names rlprof's injection library (file name librlprof_nvtx*),
// loads it (the same handle NVTX gets) and attaches this runtime. Quiet no-op otherwise;
// never throws. Returns true when attached.
bool AttachNvtxInjection() noexcept;

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_NVTX_HOST_H_
