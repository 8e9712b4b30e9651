#include "src/runtime/nvtx_host.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace rlprof::runtime {

rlprof_nvtx_host LocalNvtxHost(bool control) {
  rlprof_nvtx_host h;
  std::memset(&h, 0, sizeof h);
  h.abi = kRlprofNvtxHostAbi;
  h.size = sizeof h;
  h.window = &rlprof_window;
  h.ticks = &rlprof_ticks;
  h.intern = &rlprof_intern;
  h.emit = &rlprof_emit;
  h.emit_track = &rlprof_emit_track;
  h.track = &rlprof_track;
  h.register_source = &rlprof_register_source;
  h.unregister_source = &rlprof_unregister_source;
  h.set_thread_name = &rlprof_set_thread_name;
  if (control) {
    h.step_begin = &rlprof_step_begin;
    h.step_end = &rlprof_step_end;
    h.stage_begin = &rlprof_stage_begin;
    h.stage_end = &rlprof_stage_end;
  }
  return h;
}

bool AttachNvtxInjection() noexcept {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return false;
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? p : p.substr(slash + 1);
  if (base.rfind("librlprof_nvtx", 0) != 0) return false;  // another tool's injection
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  auto attach = reinterpret_cast<rlprof_nvtx_attach_fn>(dlsym(lib, "rlprof_nvtx_attach"));
  if (attach == nullptr) return false;  // the handle stays open: NVTX may use the library
  const rlprof_nvtx_host h = LocalNvtxHost(false);
  return attach(&h) == 0;
}

}  // namespace rlprof::runtime
