// A fast, string-aware pass over Chrome trace JSON text that (1) finds the events array and
// the byte offsets where it can be cut into independently parseable chunks, (2) repairs in
// place what strict parsers reject (trailing commas, invalid UTF-8) and (3) finds where a
// truncated file stops being complete. The chunks are then parsed with simdjson On-Demand,
// so memory stays ~1× the text however large the file is.
//
//   size_t bad = SanitizeUtf8(buf, n);               // invalid bytes → '?'
//   JsonLayout l = ScanJson(buf, n, 1 << 20);          // trailing commas blanked in place
//   for (size_t i = 0; i + 1 < l.cuts.size(); ++i) { parse "[" buf[cuts[i]+1 .. cuts[i+1]) "]" }
//
// Thread-safety: pure functions over the caller's buffer.
#ifndef RLPROF_SRC_ANALYSIS_READERS_JSON_SCAN_H_
#define RLPROF_SRC_ANALYSIS_READERS_JSON_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rlprof::analysis {

struct JsonLayout {
  enum class Form { kNone, kObject, kArray };
  Form form = Form::kNone;
  size_t top_open = 0;  // offset of the top-level '{' or '['
  // The events array ("traceEvents" of the object form, or the top-level array).
  bool has_events = false;
  size_t events_open = 0;   // offset of its '['
  size_t events_close = 0;  // offset of its ']' (or, when truncated, where the last complete
                            // element ends: the cut to close with ']')
  // Chunk boundaries inside the events array: events_open, some separating commas,
  // events_close. Every chunk (cuts[i], cuts[i+1]) holds whole elements only.
  std::vector<size_t> cuts;
  uint64_t elements = 0;    // complete object/array elements of the events array
  // Object form: where the metadata (everything but the events array) ends when truncated:
  // the offset just past the last complete top-level value.
  size_t last_top_value_end = 0;
  bool truncated = false;            // the text ends inside the top-level value
  uint64_t trailing_commas = 0;      // removed (blanked) in place
  uint64_t trailing_garbage = 0;     // non-blank bytes after the top-level value
  uint64_t too_deep = 0;             // nesting beyond the supported depth
  // Object form with "traceEvents" more than once: the last array is the events array; the
  // earlier ones are blanked in place to "[ ]" and their elements counted here.
  uint64_t duplicate_events_keys = 0;
  uint64_t duplicate_events_dropped = 0;
};

// Replaces every byte that is not part of valid UTF-8 with '?'; returns how many.
size_t SanitizeUtf8(char* data, size_t n);

// Scans `data[0, n)`. `chunk_bytes`: aim for chunks of about this size. Uses AVX2 when the
// CPU has it (checked once), else SSE2 (x86-64) or plain C++.
JsonLayout ScanJson(char* data, size_t n, size_t chunk_bytes);
// The same without AVX2 (tests compare both).
JsonLayout ScanJsonBaseline(char* data, size_t n, size_t chunk_bytes);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_JSON_SCAN_H_
