// The one JSON string escaper of rlprof, and the UTF-8 repair it relies on. Every writer that
// emits JSON text (Chrome trace, summaries) goes through AppendJsonString.
//
//   std::string out;
//   AppendJsonString(&out, name);   // appends "…" with quotes, backslashes and control
//                                   // characters escaped; invalid UTF-8 becomes U+FFFD
//   std::string ok = SanitizeUtf8(bytes);   // same repair, no escaping (protobuf, SQLite)
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_FORMAT_JSON_ESCAPE_H_
#define RLPROF_SRC_FORMAT_JSON_ESCAPE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rlprof::format {

// Appends `s` as a quoted JSON string. Escapes `"` and `\`, writes \n \t \r \b \f for those
// controls and \u00XX for the other bytes below 0x20; keeps valid UTF-8 (including U+2028)
// as is and replaces each byte of an invalid sequence with U+FFFD (EF BF BD).
void AppendJsonString(std::string* out, std::string_view s);

// Length of the valid UTF-8 sequence starting at s[i], or 0 if s[i] starts no valid one
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i);

// `s` with every invalid byte replaced by U+FFFD; `s` itself when it is valid.
std::string SanitizeUtf8(std::string_view s);
bool IsValidUtf8(std::string_view s);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_JSON_ESCAPE_H_
