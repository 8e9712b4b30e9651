// Any trace the readers understand (Kineto / torch.profiler JSON, legacy torch JSON, Ascend
// trace_view.json) as an rlprof capture, so `rlprof export` writes it with the same exporters
// as its own captures: a multi-GB Chrome JSON becomes a compact .pftrace or a SQLite .db.
//
//   auto t = ReadTrace("rank0.pt.trace.json.gz");
//   format::Capture c = CaptureFromTrace(*t, Classifier::Default());
//   ExportCaptures({&c, 1}, ExportFormat::kPftrace, "rank0.pftrace");
//
// Slices keep their name, track, time and duration; the category comes from the classifier
// (kernel, communication, memcpy, memset, sync, operator, runtime call, marker) with the
// arguments the exporters show (correlation id, bytes, group, shapes). Counter samples keep
// their series. What cannot be represented is counted in the capture's diagnostics.
// Thread-safety: pure function.
#ifndef RLPROF_SRC_ANALYSIS_RUN_TO_CAPTURE_H_
#define RLPROF_SRC_ANALYSIS_RUN_TO_CAPTURE_H_

#include "src/analysis/passes/classify.h"
#include "src/analysis/model/trace.h"
#include "src/format/capture.h"

namespace rlprof::analysis {

format::Capture CaptureFromTrace(const Trace& t, const Classifier& cls);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_TO_CAPTURE_H_
