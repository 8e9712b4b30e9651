// Perfetto protobuf (.pftrace) writer, opened by ui.perfetto.dev and trace_processor.
// Layout as the Chrome JSON export (trace_layout.h): a process track per host process and per
// device, thread tracks for threads and device streams, counter tracks, and one lane track per
// set of non-overlapping async ranges. Each capture is its own packet sequence with interned
// event names, categories and argument names. Complete events become SLICE_BEGIN/SLICE_END
// pairs (clipped to nest inside their parent), marks INSTANT, counters COUNTER. Timestamps
// are ns on the capture clock aligned to rank 0, written as the default (BOOTTIME) clock,
// with a ClockSnapshot relating them to REALTIME when the manifest has anchors.
//
//   RLPROF_ASSIGN_OR_RETURN(ExportStats s, WritePerfettoFile(captures, "trace.pftrace"));
//
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_FORMAT_PERFETTO_TRACE_H_
#define RLPROF_SRC_FORMAT_PERFETTO_TRACE_H_

#include <span>
#include <string>

#include "src/format/capture.h"
#include "src/format/export.h"

namespace rlprof::format {

ExportStats WritePerfetto(std::span<const Capture> captures, ByteSink* sink);
// Gzip-compressed when `path` ends in ".gz" (trace_processor sniffs and inflates it).
base::StatusOr<ExportStats> WritePerfettoFile(std::span<const Capture> captures,
                                              const std::string& path);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_PERFETTO_TRACE_H_
