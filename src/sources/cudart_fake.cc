// A stand-in libcudart for the CUDA profiler API source's tests (cuda_profiler_test):
// cudaProfilerStart / cudaProfilerStop append "start <CLOCK_MONOTONIC ns> <rc>" / "stop <ns> <rc>"
// lines to $RLPROF_FAKE_CUDART_LOG, so a test can place them against rlprof's capture windows.
//  - CI (no GPU): a fake; RLPROF_FAKE_CUDART_ERROR=<n> makes both return n.
//  - GPU machine: with RLPROF_REAL_CUDART=<path of libcudart.so.N> every call is forwarded to
//    the real library (its cudaError_t logged and returned), so the same test shows the real
//    CUDA runtime getting the calls at the window edges.
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace {

using Fn = int (*)();

Fn Real(const char* name) {
  const char* path = std::getenv("RLPROF_REAL_CUDART");
  if (path == nullptr || *path == '\0') return nullptr;
  static void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return lib != nullptr ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
}

int Record(const char* what, Fn real) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int rc = 0;
  if (std::getenv("RLPROF_REAL_CUDART") != nullptr) {
    rc = real != nullptr ? real() : -1;  // -1: the real library or its symbol is missing
  } else if (const char* err = std::getenv("RLPROF_FAKE_CUDART_ERROR")) {
    rc = std::atoi(err);
  }
  if (const char* path = std::getenv("RLPROF_FAKE_CUDART_LOG")) {
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%s %lld %d\n", what,
                   static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec, rc);
      std::fclose(f);
    }
  }
  return rc;
}

}  // namespace

extern "C" int cudaProfilerStart() { return Record("start", Real("cudaProfilerStart")); }
extern "C" int cudaProfilerStop() { return Record("stop", Real("cudaProfilerStop")); }
