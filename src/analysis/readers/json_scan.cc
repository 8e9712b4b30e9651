#include "src/analysis/readers/json_scan.h"

#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

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

namespace {

struct BlockMasks {
  // Brackets only: commas matter only right after an element of the events array closes,
  // where they are found by a short forward look (most commas are skipped for free).
  uint64_t quote = 0, backslash = 0, structural = 0;  // structural: { } [ ]
};

#if defined(__SSE2__)
inline uint64_t Mask16(__m128i v, char c) {
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
}
inline BlockMasks Classify(const char* p) {
  BlockMasks m;
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const int sh = 16 * k;
    m.quote |= Mask16(v, '"') << sh;
    m.backslash |= Mask16(v, '\\') << sh;
    __m128i sv = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}'))),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')), _mm_cmpeq_epi8(v, _mm_set1_epi8(']'))));
    uint64_t s = static_cast<uint32_t>(_mm_movemask_epi8(sv));
    m.structural |= s << sh;
  }
  return m;
}
#if defined(__GNUC__) && defined(__x86_64__)
#define RLPROF_HAVE_AVX2_SCAN 1
// The same classification 32 bytes at a time, for CPUs with AVX2 (chosen once at run time).
__attribute__((target("avx2"))) BlockMasks ClassifyAvx2(const char* p) {
  BlockMasks m;
  for (int k = 0; k < 2; ++k) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    const int sh = 32 * k;
    m.quote |= static_cast<uint64_t>(static_cast<uint32_t>(
                   _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('"')))))
               << sh;
    m.backslash |= static_cast<uint64_t>(static_cast<uint32_t>(
                       _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('\\')))))
                   << sh;
    __m256i sv = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('{')),
                        _mm256_cmpeq_epi8(v, _mm256_set1_epi8('}'))),
        _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('[')),
                        _mm256_cmpeq_epi8(v, _mm256_set1_epi8(']'))));
    m.structural |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(sv))) << sh;
  }
  return m;
}
#endif
#else
inline BlockMasks Classify(const char* p) {
  BlockMasks m;
  for (int i = 0; i < 64; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    switch (p[i]) {
      case '"': m.quote |= bit; break;
      case '\\': m.backslash |= bit; break;
      case '{': case '}': case '[': case ']': m.structural |= bit; break;
      default: break;
    }
  }
  return m;
}
#endif

inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

inline int Ctz(uint64_t x) { return __builtin_ctzll(x); }

}  // namespace

namespace {

// Which bytes of a 64-byte block a backslash escapes (rare: handled bit by bit). `carry`: the
// block's first byte is escaped by the previous block's last backslash (in), the next block's
// is (out).
[[gnu::always_inline]] inline uint64_t EscapedBits(uint64_t backslash, uint64_t* carry) {
  uint64_t escaped = 0;
  uint64_t bs = backslash;
  if (*carry) {
    escaped |= 1;
    bs &= ~uint64_t{1};
    *carry = 0;
  }
  while (bs) {
    const int i = Ctz(bs);
    bs &= bs - 1;
    if (i == 63) {
      *carry = 1;
    } else {
      escaped |= uint64_t{1} << (i + 1);
      bs &= ~(uint64_t{1} << (i + 1));
    }
  }
  return escaped;
}

// The scan's state between structural bytes: the open containers and where the events array is.
struct Scan {
  Scan(JsonLayout* layout, char* d, size_t size, size_t first_byte, size_t chunk)
      : l(*layout), data(d), n(size), first(first_byte), chunk_bytes(chunk), top_end(size) {}
  JsonLayout& l;
  char* data;
  size_t n, first, chunk_bytes;
  // Open containers, by bracket byte (a fixed array: no capacity checks on the hot path).
  char stack[kMaxDepth];
  size_t depth = 0;
  size_t events_depth = 0;  // stack size inside the events array (0: not inside)
  size_t next_cut = 0;
  bool done = false;
  size_t top_end;

  // '{' or '[' at i: the events array starts at a top-level array, or at "traceEvents".
  [[gnu::always_inline]] void Open(size_t i, char c) {
    if (depth >= kMaxDepth) {
      ++l.too_deep;
      return;
    }
    stack[depth++] = c;
    if (c != '[' || (l.has_events && events_depth != 0)) return;
    const bool events = (depth == 1 && l.form == JsonLayout::Form::kArray && !l.has_events) ||
                        (depth == 2 && l.form == JsonLayout::Form::kObject && KeyBefore(data, i) == "traceEvents");
    if (!events) return;
    if (l.has_events) {
      // "traceEvents" again: the last array wins (as Python's json, Chrome and Perfetto
      // read it). The earlier one is blanked to "[ ]" so the metadata reads without it.
      ++l.duplicate_events_keys;
      l.duplicate_events_dropped += l.elements;
      std::memset(data + l.events_open + 1, ' ', l.events_close - l.events_open - 1);
      l.cuts.clear();
      l.elements = 0;
    }
    l.has_events = true;
    l.events_open = i;
    l.cuts.push_back(i);
    events_depth = depth;
    next_cut = i + chunk_bytes;
  }

  // '}' or ']' at i: a trailing comma before it blanked; an element of the events array ends
  // (a chunk cut after it once chunk_bytes have passed), or the array itself.
  [[gnu::always_inline]] void Close(size_t i) {
    size_t j = i;
    while (j > first && IsBlank(data[j - 1])) --j;
    if (j > first && data[j - 1] == ',') {
      data[j - 1] = ' ';
      ++l.trailing_commas;
      if (l.cuts.size() > 1 && l.cuts.back() == j - 1) l.cuts.pop_back();
    }
    if (depth == 0) return;  // stray closer: the parser reports it
    --depth;
    if (events_depth != 0 && depth == events_depth) {
      ++l.elements;
      l.events_close = i + 1;  // provisional: where a truncated array would be cut
      if (i >= next_cut) {
        size_t k = i + 1;
        while (k < n && IsBlank(data[k])) ++k;
        if (k < n && data[k] == ',') {
          l.cuts.push_back(k);
          next_cut = k + chunk_bytes;
        }
      }
    } else if (events_depth != 0 && depth + 1 == events_depth) {
      l.events_close = i;  // the array's own ']'
      l.cuts.push_back(i);
      events_depth = 0;
    }
    if (depth == 1 && l.form == JsonLayout::Form::kObject) l.last_top_value_end = i + 1;
    if (depth == 0) {
      done = true;
      top_end = i + 1;
    }
  }

  // After the last block: trailing bytes, truncation, and the events array's last cut.
  void Finish() {
    if (done) {
      for (size_t i = top_end; i < n; ++i)
        if (!IsBlank(data[i])) ++l.trailing_garbage;
    } else {
      l.truncated = true;
    }
    if (l.has_events && events_depth != 0) {
      // The events array never closed: cut after its last complete element.
      if (l.elements == 0) l.events_close = l.events_open + 1;
      while (l.cuts.size() > 1 && l.cuts.back() >= l.events_close) l.cuts.pop_back();
      l.cuts.push_back(l.events_close);
    }
  }
};

template <BlockMasks (*ClassifyFn)(const char*)>
JsonLayout ScanImpl(char* data, size_t n, size_t chunk_bytes) {
  JsonLayout l;
  size_t first = 0;
  while (first < n && IsBlank(data[first])) ++first;
  if (first >= n || (data[first] != '{' && data[first] != '[')) return l;
  l.top_open = first;
  l.form = data[first] == '{' ? JsonLayout::Form::kObject : JsonLayout::Form::kArray;
  Scan scan(&l, data, n, first, chunk_bytes);
  uint64_t escape_carry = 0;     // the first byte of the next block is escaped
  uint64_t in_string_carry = 0;  // all-ones when the previous block ended inside a string
  char tail[64];
  for (size_t base = 0; base < n && !scan.done; base += 64) {
    const char* block = data + base;
    if (n - base < 64) {
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, data + base, n - base);
      block = tail;
    }
    const BlockMasks m = ClassifyFn(block);
    const uint64_t quotes = m.quote & ~EscapedBits(m.backslash, &escape_carry);
    const uint64_t in_string = PrefixXor(quotes) ^ in_string_carry;
    in_string_carry = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    uint64_t structural = m.structural & ~in_string;
    while (structural && !scan.done) {
      const size_t i = base + static_cast<size_t>(Ctz(structural));
      structural &= structural - 1;
      if (i < first) continue;
      const char c = data[i];
      if (c == '{' || c == '[') scan.Open(i, c);
      else scan.Close(i);
    }
  }
  scan.Finish();
  return l;
}
}  // namespace

JsonLayout ScanJsonBaseline(char* data, size_t n, size_t chunk_bytes) {
  return ScanImpl<Classify>(data, n, chunk_bytes);
}

JsonLayout ScanJson(char* data, size_t n, size_t chunk_bytes) {
#if defined(RLPROF_HAVE_AVX2_SCAN)
  static const bool kAvx2 = __builtin_cpu_supports("avx2");
  return kAvx2 ? ScanImpl<ClassifyAvx2>(data, n, chunk_bytes)
               : ScanImpl<Classify>(data, n, chunk_bytes);
#else
  return ScanImpl<Classify>(data, n, chunk_bytes);
#endif
}

}  // namespace rlprof::analysis
