// Saturating time arithmetic and the valid range of trace times, in one place. Every reader,
// the partition, the step/stage windows and the writers do their int64-nanosecond arithmetic
// through these helpers, so a hostile timestamp (INT64_MAX, 1e300 µs, a corrupt clock anchor)
// is clamped or dropped and counted by the caller, never signed overflow.
//
// The valid range: a time t is valid when |t| ≤ kMaxTimeNs (2^62 − 1 ns, about 146 years on
// either side of the clock's zero); a duration d when 0 ≤ d ≤ kMaxTimeNs. The bound is chosen
// so that the sum or the difference of any two valid values fits in int64: code that has
// checked its inputs may add a time and a duration, or subtract two times, without care.
//
//   int64_t ns;
//   if (!MicrosToNanos(1e300, &ns)) diag.Add("time_out_of_range");   // dropped, counted
//   int64_t end = SatAdd(ts, dur);                                   // never wraps
//   if (ClampTime(&ts)) diag.Add("time_clamped");                    // clamped, counted
//
// Thread-safety: pure constexpr functions.
#ifndef RLPROF_SRC_BASE_TIME_MATH_H_
#define RLPROF_SRC_BASE_TIME_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace rlprof::base {

inline constexpr int64_t kMaxTimeNs = (int64_t{1} << 62) - 1;
inline constexpr int64_t kMinTimeNs = -kMaxTimeNs;

// a + b, saturated to [INT64_MIN, INT64_MAX].
constexpr int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// a − b, saturated to [INT64_MIN, INT64_MAX].
constexpr int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// a × b, saturated.
constexpr int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) == (b < 0) ? std::numeric_limits<int64_t>::max()
                            : std::numeric_limits<int64_t>::min();
}

constexpr bool IsValidTime(int64_t t) { return t >= kMinTimeNs && t <= kMaxTimeNs; }
constexpr bool IsValidDuration(int64_t d) { return d >= 0 && d <= kMaxTimeNs; }

// Clamps `t` into the valid range; true when it had to.
constexpr bool ClampTime(int64_t* t) {
  if (*t > kMaxTimeNs) {
    *t = kMaxTimeNs;
    return true;
  }
  if (*t < kMinTimeNs) {
    *t = kMinTimeNs;
    return true;
  }
  return false;
}

// Clamps a (valid) start time's duration so that the duration is valid and the end
// ts + dur is a valid time; true when it had to (a negative duration becomes 0).
constexpr bool ClampDuration(int64_t ts, int64_t* dur) {
  if (*dur < 0) {
    *dur = 0;
    return true;
  }
  // ts is valid, so kMaxTimeNs − ts cannot overflow; a duration itself is at most kMaxTimeNs.
  int64_t room = kMaxTimeNs - (ts > kMaxTimeNs ? kMaxTimeNs : ts < kMinTimeNs ? kMinTimeNs : ts);
  if (room > kMaxTimeNs) room = kMaxTimeNs;
  if (*dur > room) {
    *dur = room;
    return true;
  }
  return false;
}

// Microseconds / milliseconds (a double, as JSON holds them) → nanoseconds. False — and *ns
// untouched — for NaN, infinities and values whose nanoseconds are not a valid time.
inline bool MicrosToNanos(double us, int64_t* ns) {
  if (!std::isfinite(us)) return false;
  const double v = std::round(us * 1000.0);
  if (!(std::fabs(v) <= static_cast<double>(kMaxTimeNs))) return false;  // NaN-safe
  const int64_t r = static_cast<int64_t>(v);  // |v| ≤ 2^62: exact, in range of int64
  if (!IsValidTime(r)) return false;
  *ns = r;
  return true;
}
inline bool MillisToNanos(double ms, int64_t* ns) {
  if (!std::isfinite(ms)) return false;
  return MicrosToNanos(ms * 1000.0, ns);
}
// Integer microseconds → nanoseconds; false when out of the valid range.
constexpr bool IntMicrosToNanos(int64_t us, int64_t* ns) {
  if (us > kMaxTimeNs / 1000 || us < kMinTimeNs / 1000) return false;
  *ns = us * 1000;
  return true;
}

}  // namespace rlprof::base

#endif  // RLPROF_SRC_BASE_TIME_MATH_H_
