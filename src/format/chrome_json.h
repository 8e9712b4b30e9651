// Chrome trace-event JSON writer (object form), opened by Perfetto UI and chrome://tracing.
// Follows docs/formats.md and the writer rules of trace-formats.md §1.6: `traceEvents` first,
// `displayTimeUnit: "ns"`, µs times with exactly three decimals relative to the earliest
// event, `X` slices clipped to nest per thread, `i` instants, `C` counters, `b`/`e` async
// ranges, `M` names and sort indices for processes and threads, every string escaped.
//
//   StringSink sink;
//   ExportStats stats = WriteChromeJson(captures, &sink);
//   RLPROF_ASSIGN_OR_RETURN(stats, WriteChromeJsonFile(captures, "trace.json.gz"));  // gz by name
//
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_FORMAT_CHROME_JSON_H_
#define RLPROF_SRC_FORMAT_CHROME_JSON_H_

#include <span>
#include <string>

#include "src/format/capture.h"
#include "src/format/export.h"

namespace rlprof::format {

ExportStats WriteChromeJson(std::span<const Capture> captures, ByteSink* sink);
// Gzip-compressed when `path` ends in ".gz".
base::StatusOr<ExportStats> WriteChromeJsonFile(std::span<const Capture> captures,
                                                const std::string& path);

// "-12.345" for -12345 ns: exact decimal µs, no floating point on the way.
void AppendMicros(std::string* out, int64_t ns);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_CHROME_JSON_H_
