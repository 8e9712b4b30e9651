// A deterministic jitter for the synthetic runs (synth_run.cc, synth_async.cc): a hash of three
// integers mapped to [-1, 1), so that a run is the same for the same options.
#ifndef RLPROF_BENCH_SYNTH_JITTER_H_
#define RLPROF_BENCH_SYNTH_JITTER_H_

#include <cstdint>

namespace rlprof::bench {

inline double Jitter(int64_t a, int64_t b, uint64_t c) {
  uint64_t h = static_cast<uint64_t>(a) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(b) * 0xC2B2AE3D27D4EB4Full ^
               c * 0x165667B19E3779F9ull;
  h ^= h >> 31; h *= 0xD6E8FEB86659FD93ull; h ^= h >> 32;
  return static_cast<double>(h % 20001) / 10000.0 - 1.0;
}

}  // namespace rlprof::bench

#endif  // RLPROF_BENCH_SYNTH_JITTER_H_
