// Exact decimal-text parsing for trace timestamps: "1723456789012.345" µs → 1723456789012345 ns
// without going through a double (a double only holds 0.25 µs steps at today's epoch).
//
//   int64_t ns;
//   if (ParseMicrosToNanos("12.5", &ns)) …   // ns == 12500
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_ANALYSIS_READERS_DECIMAL_H_
#define RLPROF_SRC_ANALYSIS_READERS_DECIMAL_H_

#include <cstdint>
#include <string_view>

namespace rlprof::analysis {

// Parses a decimal number of microseconds ([-]digits[.digits][e±digits], surrounding blanks
// allowed) into nanoseconds. Digits past the third decimal round half away from zero. False on
// anything else (empty, "NaN", "inf", letters) and on int64 overflow.
bool ParseMicrosToNanos(std::string_view text, int64_t* ns);

// Parses an integer ([-]digits, blanks allowed; a fractional part is truncated). False otherwise.
bool ParseInteger(std::string_view text, int64_t* value);

// Parses a finite double. False on anything else.
bool ParseDouble(std::string_view text, double* value);

// Removes blanks outside strings from JSON text ("[[2, 3], []]" → "[[2,3],[]]").
std::string_view CompactJson(std::string_view json, char* scratch);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_DECIMAL_H_
