// The runtime's clock: raw ticks on the hot path, nanoseconds on CLOCK_MONOTONIC's timeline
// on the writer thread.
//
//   ClockCalibration cal = CalibrateClock();            // once, at session start (~10 ms)
//   uint64_t t = rlprof::internal::ReadTicks();          // hot path: rdtsc or monotonic ns
//   int64_t ns = cal.converter.ToNs(t);                   // writer thread
//
// The TSC is used only where it is invariant (cpuid 0x80000007 EDX bit 8) and calibration
// agrees with CLOCK_MONOTONIC; otherwise ticks are CLOCK_MONOTONIC nanoseconds and the
// conversion is the identity. The rate is refined over the session's lifetime (`Refine`),
// so longer sessions convert more precisely.
// Thread-safety: the converter is a value; CalibrateClock/Refine touch no shared state
// except `internal::g_hot.use_tsc`, which CalibrateClock sets.
#ifndef RLPROF_SRC_RUNTIME_CLOCK_H_
#define RLPROF_SRC_RUNTIME_CLOCK_H_

#include <cstdint>

namespace rlprof::runtime {

enum class ClockSource { kTsc, kMonotonic };
const char* ClockSourceName(ClockSource s);

// True when the CPU reports an invariant TSC (constant rate across P/C states).
bool HasInvariantTsc();
// Reads the TSC (x86-64 only; 0 elsewhere).
uint64_t ReadTsc();
int64_t MonotonicNowNs();
int64_t RealtimeNowNs();

// Linear map from ticks to monotonic ns: ns = anchor_ns + (ticks - anchor_ticks) * rate.
struct TickConverter {
  ClockSource source = ClockSource::kMonotonic;
  uint64_t anchor_ticks = 0;
  int64_t anchor_ns = 0;
  // ns per tick as a 32.32 fixed-point multiplier (1.0 for the monotonic source).
  uint64_t mult = uint64_t{1} << 32;

  int64_t ToNs(uint64_t ticks) const;
  int64_t DurationNs(int64_t ticks) const;
  double tick_hz() const;
  // A converter with the same rate, re-anchored at (ticks, ns) so that error accumulates
  // only from the anchor on.
  TickConverter Reanchored(uint64_t ticks, int64_t ns) const;
};

// One (ticks, monotonic, realtime) reading taken as close together as possible.
struct ClockSample {
  uint64_t ticks = 0;
  int64_t monotonic_ns = 0;
  int64_t realtime_ns = 0;
};

struct ClockCalibration {
  TickConverter converter;
  ClockSample start;  // anchors for the manifest
  // Why the TSC was not used, when it was not ("" when it was).
  const char* fallback_reason = "";
};

// Decides the source, measures the TSC rate over `calibration_ms`, and sets the hot path's
// tick source accordingly. `allow_tsc` = false forces CLOCK_MONOTONIC (RLPROF_CLOCK=monotonic).
ClockCalibration CalibrateClock(bool allow_tsc = true, int calibration_ms = 10);
// Takes a sample of the clock currently used by the hot path.
ClockSample SampleClock(ClockSource source);
// Re-measures the rate from `cal.start` to `now` (when at least 50 ms apart) and returns the
// converter anchored at `now` (a SampleClock(cal.converter.source) reading).
TickConverter Refine(const ClockCalibration& cal, const ClockSample& now);

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_CLOCK_H_
