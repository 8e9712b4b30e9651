#include "src/runtime/clock.h"

#include <time.h>

#include <cmath>

#include "rlprof/rlprof.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define RLPROF_HAVE_TSC 1
#else
#define RLPROF_HAVE_TSC 0
#endif

namespace rlprof::runtime {

const char* ClockSourceName(ClockSource s) { return s == ClockSource::kTsc ? "tsc" : "monotonic"; }

bool HasInvariantTsc() {
#if RLPROF_HAVE_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  __cpuid(0x80000007, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

uint64_t ReadTsc() {
#if RLPROF_HAVE_TSC
  return __rdtsc();
#else
  return 0;
#endif
}

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t TickConverter::ToNs(uint64_t ticks) const {
  const int64_t delta = static_cast<int64_t>(ticks - anchor_ticks);
  return anchor_ns + static_cast<int64_t>((static_cast<__int128>(delta) * mult) >> 32);
}

int64_t TickConverter::DurationNs(int64_t ticks) const {
  return static_cast<int64_t>((static_cast<__int128>(ticks) * mult) >> 32);
}

double TickConverter::tick_hz() const {
  return 1e9 * 4294967296.0 / static_cast<double>(mult);
}

TickConverter TickConverter::Reanchored(uint64_t ticks, int64_t ns) const {
  TickConverter c = *this;
  c.anchor_ticks = ticks;
  c.anchor_ns = ns;
  return c;
}

namespace {

// A (tsc, monotonic) pair whose two TSC reads bracket the clock_gettime tightly: the best of a
// few attempts, so preemption between the reads does not skew the calibration.
ClockSample TightTscSample() {
  ClockSample best;
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    const uint64_t t1 = ReadTsc();
    const int64_t m = MonotonicNowNs();
    const uint64_t t2 = ReadTsc();
    if (t2 >= t1 && t2 - t1 < best_gap) {
      best_gap = t2 - t1;
      best.ticks = t1 + (t2 - t1) / 2;
      best.monotonic_ns = m;
    }
  }
  best.realtime_ns = RealtimeNowNs();
  return best;
}

uint64_t MultFor(double ns_per_tick) {
  return static_cast<uint64_t>(std::llround(ns_per_tick * 4294967296.0));
}

}  // namespace

ClockSample SampleClock(ClockSource source) {
  if (source == ClockSource::kTsc) return TightTscSample();
  ClockSample s;
  s.monotonic_ns = MonotonicNowNs();
  s.realtime_ns = RealtimeNowNs();
  s.ticks = static_cast<uint64_t>(s.monotonic_ns);
  return s;
}

ClockCalibration CalibrateClock(bool allow_tsc, int calibration_ms) {
  ClockCalibration cal;
  bool use_tsc = false;
  if (!allow_tsc) {
    cal.fallback_reason = "disabled by configuration";
  } else if (!RLPROF_HAVE_TSC) {
    cal.fallback_reason = "not an x86-64 CPU";
  } else if (!HasInvariantTsc()) {
    cal.fallback_reason = "TSC is not invariant";
  } else {
    const ClockSample a = TightTscSample();
    const int64_t until = a.monotonic_ns + int64_t{calibration_ms} * 1000000;
    while (MonotonicNowNs() < until) {
      timespec req{0, 1000000};
      nanosleep(&req, nullptr);
    }
    const ClockSample b = TightTscSample();
    const double dns = static_cast<double>(b.monotonic_ns - a.monotonic_ns);
    const double dticks = static_cast<double>(b.ticks - a.ticks);
    const double hz = dns > 0 ? dticks * 1e9 / dns : 0;
    if (b.ticks > a.ticks && hz > 1e8 && hz < 2e10) {
      use_tsc = true;
      cal.converter.source = ClockSource::kTsc;
      cal.converter.mult = MultFor(1e9 / hz);
      cal.converter.anchor_ticks = b.ticks;
      cal.converter.anchor_ns = b.monotonic_ns;
      cal.start = b;
    } else {
      cal.fallback_reason = "TSC calibration against CLOCK_MONOTONIC failed";
    }
  }
  if (!use_tsc) {
    cal.start = SampleClock(ClockSource::kMonotonic);
    cal.converter = TickConverter{};
    cal.converter.anchor_ticks = cal.start.ticks;
    cal.converter.anchor_ns = cal.start.monotonic_ns;
  }
  __atomic_store_n(&rlprof_hot.use_tsc, use_tsc ? 1u : 0u, __ATOMIC_RELAXED);
  return cal;
}

TickConverter Refine(const ClockCalibration& cal, const ClockSample& now) {
  TickConverter c = cal.converter;
  if (c.source == ClockSource::kTsc) {
    const int64_t dns = now.monotonic_ns - cal.start.monotonic_ns;
    if (dns >= 50000000 && now.ticks > cal.start.ticks) {
      c.mult = MultFor(static_cast<double>(dns) / static_cast<double>(now.ticks - cal.start.ticks));
    }
  }
  return c.Reanchored(now.ticks, now.monotonic_ns);
}

}  // namespace rlprof::runtime
