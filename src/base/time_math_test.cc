#include "src/base/time_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rlprof::base {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(TimeMath, SaturatingAddAndSubtractNeverWrap) {
  EXPECT_EQ(SatAdd(kMax, 1), kMax);
  EXPECT_EQ(SatAdd(kMin, -1), kMin);
  EXPECT_EQ(SatAdd(kMax, kMin), -1);
  EXPECT_EQ(SatAdd(40, 2), 42);
  EXPECT_EQ(SatSub(kMin, 1), kMin);
  EXPECT_EQ(SatSub(kMax, -1), kMax);
  EXPECT_EQ(SatSub(0, kMin), kMax);
  EXPECT_EQ(SatSub(44, 2), 42);
  EXPECT_EQ(SatMul(kMax / 2, 3), kMax);
  EXPECT_EQ(SatMul(kMax / 2, -3), kMin);
  EXPECT_EQ(SatMul(-6, 7), -42);
}

TEST(TimeMath, SumsAndDifferencesOfValidValuesFitInInt64) {
  int64_t r;
  EXPECT_FALSE(__builtin_add_overflow(kMaxTimeNs, kMaxTimeNs, &r));
  EXPECT_FALSE(__builtin_sub_overflow(kMaxTimeNs, kMinTimeNs, &r));
  EXPECT_FALSE(__builtin_sub_overflow(kMinTimeNs, kMaxTimeNs, &r));
}

TEST(TimeMath, ClampTimeReportsWhetherItClamped) {
  int64_t t = kMax;
  EXPECT_TRUE(ClampTime(&t));
  EXPECT_EQ(t, kMaxTimeNs);
  t = kMin;
  EXPECT_TRUE(ClampTime(&t));
  EXPECT_EQ(t, kMinTimeNs);
  t = 123;
  EXPECT_FALSE(ClampTime(&t));
  EXPECT_EQ(t, 123);
}

TEST(TimeMath, ClampDurationKeepsTheEndValidAndZeroesNegatives) {
  int64_t d = -5;
  EXPECT_TRUE(ClampDuration(0, &d));
  EXPECT_EQ(d, 0);
  d = kMax;
  EXPECT_TRUE(ClampDuration(kMaxTimeNs - 10, &d));
  EXPECT_EQ(d, 10);
  d = kMax;
  EXPECT_TRUE(ClampDuration(kMinTimeNs, &d));
  EXPECT_EQ(d, kMaxTimeNs);
  EXPECT_TRUE(IsValidTime(kMinTimeNs + d));
  d = 1000;
  EXPECT_FALSE(ClampDuration(5, &d));
  EXPECT_EQ(d, 1000);
}

TEST(TimeMath, MicrosToNanosRejectsNonFiniteAndOutOfRange) {
  int64_t ns = 7;
  EXPECT_FALSE(MicrosToNanos(std::nan(""), &ns));
  EXPECT_FALSE(MicrosToNanos(HUGE_VAL, &ns));
  EXPECT_FALSE(MicrosToNanos(-HUGE_VAL, &ns));
  EXPECT_FALSE(MicrosToNanos(1e300, &ns));
  EXPECT_FALSE(MicrosToNanos(9.3e15, &ns));  // 9.3e18 ns > 2^62
  EXPECT_EQ(ns, 7);                           // untouched on failure
  EXPECT_TRUE(MicrosToNanos(12.5, &ns));
  EXPECT_EQ(ns, 12500);
  EXPECT_TRUE(MicrosToNanos(-3.0, &ns));
  EXPECT_EQ(ns, -3000);
  EXPECT_TRUE(MillisToNanos(2.0, &ns));
  EXPECT_EQ(ns, 2000000);
  EXPECT_FALSE(MillisToNanos(1e300, &ns));
  EXPECT_FALSE(IntMicrosToNanos(kMax, &ns));
  EXPECT_FALSE(IntMicrosToNanos(kMin, &ns));
  EXPECT_TRUE(IntMicrosToNanos(5, &ns));
  EXPECT_EQ(ns, 5000);
}

}  // namespace
}  // namespace rlprof::base
