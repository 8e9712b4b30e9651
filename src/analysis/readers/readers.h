// Readers: turn trace files into the analysis Trace model (src/analysis/model/trace.h).
//
// Formats, detected from the content (gzip is transparent):
//   - rlprof captures: a capture directory (manifest.json + events.rlp) or a bare events.rlp;
//   - Kineto / torch.profiler Chrome trace JSON (an object with "traceEvents");
//   - legacy torch JSON written without Kineto (a top-level array, pid "CPU functions");
//   - Ascend trace_view.json (a top-level array with string timestamps);
//   - Ascend profiler databases (ascend_pytorch_profiler_*.db, msprof_*.db: SQLite) and torch_npu
//     output folders (*_ascend_pt/, ASCEND_PROFILER_OUTPUT/), see ascend_db_reader.h; folders with
//     only text outputs (kernel_details.csv, communication.json), see ascend_text_reader.h;
//   - AReaL session traces (sessions-r*.jsonl: one sample per line), see areal_reader.h.
//
//   RLPROF_ASSIGN_OR_RETURN(std::vector<std::string> inputs, FindTraceInputs({"runs/"}));
//   for (const auto& in : inputs) {
//     RLPROF_ASSIGN_OR_RETURN(Trace t, ReadTrace(in));
//     … t.diagnostics lists everything that was skipped or repaired …
//   }
//
// Reading is lenient: truncated files, bad values and unknown phases become named counts in
// Trace::diagnostics. Only an unreadable file, or one holding no recognisable trace, is an
// error Status. The returned Trace is finalized (Trace::Finalize has run).
//
// Thread-safety: the functions are reentrant; read different files on different threads freely.
#ifndef RLPROF_SRC_ANALYSIS_READERS_READERS_H_
#define RLPROF_SRC_ANALYSIS_READERS_READERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

struct ReadOptions {
  bool keep_instants = true;  // false: instant events (ph i/I, kInstant) are not added as slices
};

// Auto-detects the format (rlprof capture dir / events.rlp, Kineto JSON object, legacy torch
// JSON array, Ascend trace_view.json, Ascend profiler database or torch_npu output folder),
// .gz transparent.
base::StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& opts = {});

// The same for bytes already in memory: a bare events.rlp, an Ascend profiler database image,
// or a JSON trace (gzip transparent).
// `name` stands for the path in messages and in Trace::source. Used by the fuzz targets.
base::StatusOr<Trace> ReadTraceBytes(std::string_view bytes, const std::string& name,
                                     const ReadOptions& opts = {});

// Expands directories: every capture dir (has manifest.json), every torch_npu output folder
// (has ASCEND_PROFILER_OUTPUT/; one input, not descended into), every events.rlp without a
// manifest, every ascend_pytorch_profiler*.db / msprof_*.db, and every *.json / *.json.gz /
// *.pt.trace.json(.gz) trace file below; sorted.
// Plain files and capture directories are passed through; a path that does not exist is
// NotFound. What the walk had to pass over is counted in `diag` (when given), with the path:
// folders it could not list (input_unreadable_dir), files it could not open
// (input_unreadable_file), empty files (input_empty_file), events without a manifest
// (input_events_without_manifest).
base::StatusOr<std::vector<std::string>> FindTraceInputs(const std::vector<std::string>& paths,
                                                         Diagnostics* diag = nullptr);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_READERS_H_
