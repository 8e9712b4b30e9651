// A fake libcudart for CI (no GPU): cudaProfilerStart / cudaProfilerStop append
// "start <CLOCK_MONOTONIC ns>" / "stop <ns>" lines to $RLPROF_FAKE_CUDART_LOG, so a test can
// place them against rlprof's capture windows. RLPROF_FAKE_CUDART_ERROR=<n> makes both return n.
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace {

int Record(const char* what) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (const char* path = std::getenv("RLPROF_FAKE_CUDART_LOG")) {
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%s %lld\n", what,
                   static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
      std::fclose(f);
    }
  }
  const char* err = std::getenv("RLPROF_FAKE_CUDART_ERROR");
  return err != nullptr ? std::atoi(err) : 0;
}

}  // namespace

extern "C" int cudaProfilerStart() { return Record("start"); }
extern "C" int cudaProfilerStop() { return Record("stop"); }
