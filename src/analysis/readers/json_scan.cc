#include "src/analysis/readers/json_scan.h"

#include <cstring>
#include <string_view>

namespace rlprof::analysis {

size_t SanitizeUtf8(char* data, size_t n) {
  auto* p = reinterpret_cast<unsigned char*>(data);
  size_t bad = 0;
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t min = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      min = 0x10000;
    }
    bool ok = len != 0 && i + len <= n;
    uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok) {
      i += len;
    } else {
      p[i] = '?';  // one byte at a time: the next byte is re-examined on its own
      ++bad;
      ++i;
    }
  }
  return bad;
}

namespace {

constexpr size_t kMaxDepth = 1024;

inline bool IsBlank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The key text before the ':' that precedes offset `pos` (a value's first byte), or "".
std::string_view KeyBefore(const char* data, size_t pos) {
  size_t i = pos;
  while (i > 0 && IsBlank(data[i - 1])) --i;
  if (i == 0 || data[i - 1] != ':') return {};
  --i;
  while (i > 0 && IsBlank(data[i - 1])) --i;
  if (i == 0 || data[i - 1] != '"') return {};
  size_t end = --i;
  while (i > 0 && data[i - 1] != '"') --i;
  if (i == 0) return {};
  return {data + i, end - i};
}

}  // namespace

JsonLayout ScanJson(char* data, size_t n, size_t chunk_bytes) {
  JsonLayout l;
  // Stack of open containers; only the bracket byte is kept.
  std::string stack;
  stack.reserve(64);
  size_t events_depth = 0;  // stack size inside the events array (0: not inside)
  size_t next_cut = 0;
  size_t last_sig = SIZE_MAX;  // offset of the last non-blank byte outside strings
  size_t i = 0;
  bool started = false;
  bool done = false;
  size_t top_end = n;
  while (i < n) {
    char c = data[i];
    if (c == '"') {
      // Skip the string: find the closing quote not preceded by an odd run of backslashes.
      size_t j = i + 1;
      while (true) {
        const void* q = j < n ? std::memchr(data + j, '"', n - j) : nullptr;
        if (q == nullptr) {
          j = n;
          break;
        }
        j = static_cast<const char*>(q) - data;
        size_t b = j;
        while (b > i + 1 && data[b - 1] == '\\') --b;
        if (((j - b) & 1) == 0) break;
        ++j;
      }
      if (j >= n) {  // unterminated string: the text was cut inside it
        l.truncated = true;
        break;
      }
      last_sig = j;
      i = j + 1;
      continue;
    }
    if (IsBlank(c)) {
      ++i;
      continue;
    }
    if (done) {
      ++l.trailing_garbage;
      ++i;
      continue;
    }
    switch (c) {
      case '{':
      case '[': {
        if (!started) {
          started = true;
          l.top_open = i;
          l.form = c == '{' ? JsonLayout::Form::kObject : JsonLayout::Form::kArray;
        }
        if (stack.size() >= kMaxDepth) {
          ++l.too_deep;
          break;
        }
        stack.push_back(c);
        if (c == '[' && !l.has_events &&
            ((stack.size() == 1 && l.form == JsonLayout::Form::kArray) ||
             (stack.size() == 2 && l.form == JsonLayout::Form::kObject &&
              KeyBefore(data, i) == "traceEvents"))) {
          l.has_events = true;
          l.events_open = i;
          l.cuts.push_back(i);
          events_depth = stack.size();
          next_cut = i + chunk_bytes;
        }
        break;
      }
      case '}':
      case ']': {
        if (last_sig != SIZE_MAX && data[last_sig] == ',') {
          data[last_sig] = ' ';
          ++l.trailing_commas;
          if (l.cuts.size() > 1 && l.cuts.back() == last_sig) l.cuts.pop_back();
        }
        if (stack.empty()) break;  // stray closer: simdjson will report it
        stack.pop_back();
        if (events_depth != 0 && stack.size() == events_depth) {
          ++l.elements;
          l.events_close = i + 1;  // provisional: where a truncated array would be cut
        } else if (events_depth != 0 && stack.size() + 1 == events_depth) {
          l.events_close = i;  // the array's own ']'
          l.cuts.push_back(i);
          events_depth = 0;
        }
        if (stack.size() == 1 && l.form == JsonLayout::Form::kObject) l.last_top_value_end = i + 1;
        if (stack.empty()) {
          done = true;
          top_end = i + 1;
        }
        break;
      }
      case ',':
        if (events_depth != 0 && stack.size() == events_depth && i >= next_cut) {
          l.cuts.push_back(i);
          next_cut = i + chunk_bytes;
        }
        break;
      default:
        if (!started) {  // not JSON we know: leave form = kNone
          i = n;
          continue;
        }
        break;
    }
    last_sig = i;
    ++i;
  }
  (void)top_end;
  if (started && !done) l.truncated = true;
  if (l.has_events && events_depth != 0) {
    // The events array never closed: cut after its last complete element.
    if (l.elements == 0) l.events_close = l.events_open + 1;
    while (l.cuts.size() > 1 && l.cuts.back() >= l.events_close) l.cuts.pop_back();
    l.cuts.push_back(l.events_close);
  }
  return l;
}

}  // namespace rlprof::analysis
