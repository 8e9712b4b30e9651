// rlprof captures (a capture directory or a bare events.rlp) → Trace, via format::LoadCapture.
//
//   RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(dir));
//   Trace t = TraceFromCapture(c, {});
//
// Complete events become slices with their category's name ("operator", "kernel", …) as the
// slice category; begin/end pairs are matched by range id across threads; step and stage
// events also become markers; identity comes from the manifest; everything the raw reader had
// to skip is carried over as diagnostics. Thread-safety: pure function.
#ifndef RLPROF_SRC_ANALYSIS_READERS_CAPTURE_READER_H_
#define RLPROF_SRC_ANALYSIS_READERS_CAPTURE_READER_H_

#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"
#include "src/format/capture.h"

namespace rlprof::analysis {

// The returned trace is finalized.
Trace TraceFromCapture(const format::Capture& capture, const ReadOptions& opts);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_CAPTURE_READER_H_
