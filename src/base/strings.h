// Small string helpers used across stages (std only).
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_BASE_STRINGS_H_
#define RLPROF_SRC_BASE_STRINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlprof::base {

std::vector<std::string> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string NearestWord(std::string_view word, const std::vector<std::string>& candidates);
// Human-readable byte count: "512 B", "1.5 KiB", "3.2 GiB".
std::string FormatBytes(uint64_t bytes);
// Human-readable count: "950", "12.3 k", "4.1 M".
std::string FormatCount(uint64_t n);
// A number as the shortest text that reads back the same: 0.1 -> "0.1", 1 -> "1".
std::string FormatShare(double v);
// Characters outside [0-9A-Za-z._=+-] replaced by '-' (safe for file names).
std::string SanitizeForPath(std::string_view s);

}  // namespace rlprof::base

#endif  // RLPROF_SRC_BASE_STRINGS_H_
