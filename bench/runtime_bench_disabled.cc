// The markers compiled out: this translation unit sees rlprof.hpp with RLPROF_DISABLE defined,
// exactly as an application built with -DRLPROF_DISABLE would.
#define RLPROF_DISABLE 1
#include <benchmark/benchmark.h>

#include "rlprof/rlprof.hpp"

namespace rlprof::bench {

void RangeCompiledOutLoop(benchmark::State& state, uint64_t* iterations) {
  uint64_t n = 0;
  for (auto _ : state) {
    RLPROF_RANGE("bench range");
    benchmark::DoNotOptimize(++n);
  }
  *iterations = n;
}

}  // namespace rlprof::bench
