// JSON from files rlprof does not control (manifests, trigger requests, Ascend databases'
// text columns), parsed with a nesting bound: a value nested deeper than kMaxJsonDepth is
// refused instead of parsed, so no later recursion over it (nlohmann's dump, a destructor, a
// walk) can exhaust the stack — a manifest whose `config` nested 100,000 levels killed every
// command with SIGSEGV. Header-only (nlohmann is each user's own dependency).
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_FORMAT_BOUNDED_JSON_H_
#define RLPROF_SRC_FORMAT_BOUNDED_JSON_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rlprof::format {

inline constexpr int kMaxJsonDepth = 256;

// The parsed value; `discarded` when `text` is not JSON, or nests deeper than kMaxJsonDepth
// (then *too_deep, when given, is set).
inline nlohmann::json ParseJsonBounded(std::string_view text, bool* too_deep = nullptr) {
  struct TooDeep {};
  if (too_deep != nullptr) *too_deep = false;
  try {
    return nlohmann::json::parse(
        text.begin(), text.end(),
        [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
          if (depth > kMaxJsonDepth) throw TooDeep{};
          return true;
        },
        /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    if (too_deep != nullptr) *too_deep = true;
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_BOUNDED_JSON_H_
