// Chrome trace JSON → Trace, with simdjson's On-Demand API over chunks of the events array
// (see json_scan.h): Kineto / torch.profiler objects, legacy torch arrays ("CPU functions"),
// Ascend trace_view.json (string µs timestamps) and generic Chrome JSON.
//
//   RLPROF_ASSIGN_OR_RETURN(InputBuffer in, ReadInputFile(path));
//   Trace t;
//   RLPROF_RETURN_IF_ERROR(ReadChromeJson(in, {}, &t));   // t.format: kineto / torch-legacy / …
//
// Thread-safety: reentrant; the buffer is modified in place (repairs, chunk brackets).
#ifndef RLPROF_SRC_ANALYSIS_READERS_CHROME_JSON_READER_H_
#define RLPROF_SRC_ANALYSIS_READERS_CHROME_JSON_READER_H_

#include <string_view>

#include "src/analysis/readers/input_buffer.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

// True when the text (after blanks and a UTF-8 BOM) starts like a JSON object or array.
bool LooksLikeJson(std::string_view text);

// Fills `trace` (which should be empty; `source` is kept). InvalidArgument when the text is not
// a JSON object or array; everything else becomes diagnostics. The trace is finalized.
base::Status ReadChromeJson(InputBuffer& in, const ReadOptions& opts, Trace* trace);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_CHROME_JSON_READER_H_
