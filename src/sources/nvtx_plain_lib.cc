// A shared library with plain NVTX calls and no rlprof (a stand-in for torch's / vLLM's NVTX
// use), for the Python test of the attached mode (python/tests/test_nvtx.py, through ctypes).
#include <nvtx3/nvToolsExt.h>

#include <chrono>

extern "C" __attribute__((visibility("default"))) void nvtx_plain_range(const char* name, int us) {
  nvtxRangePushA(name);
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
  nvtxRangePop();
}

extern "C" __attribute__((visibility("default"))) void nvtx_plain_domain_mark(const char* domain,
                                                                              const char* name) {
  nvtxDomainHandle_t d = nvtxDomainCreateA(domain);
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainMarkEx(d, &a);
}
