// Views of the framework contents of a capture (docs/analysis.md): time per nn.Module path
// (like TensorBoard's module view), per-stage memory peaks, and operators grouped by the user
// code line that launched them (their call stack's first frame outside torch and rlprof).
//
//   std::vector<ModuleRow> m = ModuleView(trace);             // rows sorted by path
//   std::vector<MemoryPeakRow> p = MemoryPeaks(trace, analysis.stages);
//   std::vector<FrameRow> f = OpsByFrame(trace);              // by total time, descending
//
// Thread-safety: pure functions over a finalized Trace.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_CONTENTS_H_
#define RLPROF_SRC_ANALYSIS_PASSES_CONTENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

struct StageResult;

// One module path, over all its forward calls.
struct ModuleRow {
  std::string path;   // "TinyLM.layers.0.attn"
  std::string cls;    // "Linear"
  int64_t depth = 0;  // enclosing module ranges
  int64_t calls = 0;
  int64_t total = 0;  // Σ forward durations, ns
  int64_t self = 0;   // total − Σ its child modules' durations
  int64_t ops = 0;    // operators directly under it (their nearest module), not nested in ops
  int64_t op_time = 0;  // Σ those operators' durations, ns
};

// A memory series in one stage (or the whole step when the trace has no stages).
struct MemoryPeakRow {
  int64_t step = 0;
  std::string role, stage;
  std::string series;       // "allocated_bytes cpu", "reserved_bytes cuda:0", "rss_bytes", …
  double at_start = 0;      // the series' value when the stage began (last sample before it)
  double peak = 0;          // max over the stage
  double at_end = 0;        // last value in the stage
  int64_t allocations = 0;  // allocator events in the stage on this series' device (allocated_*)
  int64_t allocated = 0;    // Σ bytes allocated in the stage (frees not subtracted)
};

// An allocation the allocator could not satisfy (rlprof's allocator source reports it; the
// CUDA out-of-memory observer of rlprof.torch writes the allocator's snapshot and a note naming
// it). The advisor's memory rule points to it.
struct OutOfMemoryRow {
  int64_t ts = 0;            // ns, the trace's clock
  std::string device;        // "cpu", "cuda:0"
  int64_t bytes = -1;        // asked for (-1 unknown)
  std::string op;            // the operator it happened in ("" unknown)
  std::string snapshot;      // the allocator snapshot's path ("" none written)
  int64_t step = -1;         // the step and stage it happened in (-1 / "" outside every one)
  std::string role, stage;
};

// Operators grouped by the user frame that launched them.
struct FrameRow {
  std::string frame;  // "train.py:42:step" (the first frame outside torch / rlprof)
  int64_t ops = 0;    // outermost operators launched from it
  int64_t total = 0;  // Σ their durations, ns
  std::string top_op; // the operator with the most time among them
  int64_t top_op_time = 0;
};

// Named user ranges and marks — rlprof's own markers, other code's NVTX ranges forwarded by
// librlprof_nvtx.so, rlprof.mstx, torch.profiler's record_function annotations — summed per
// name and track, like nsys's nvtx_sum (`rlprof summary --view ranges`).
struct RangeRow {
  std::string name;
  std::string track;   // async / domain track name (an NVTX domain, "NVTX", "… (async)"); "" = thread
  bool mark = false;   // instants: count only
  int64_t count = 0;
  int64_t total = 0;   // ns
  int64_t min = 0, max = 0, p50 = 0;
};
// Rows by total time, descending (marks after ranges, by count).
std::vector<RangeRow> UserRanges(const Trace& t);

// Frames of torch, rlprof and the interpreter's own (frozen importlib, <string>).
bool IsFrameworkFrame(std::string_view file);
// A frame rlprof's stack source marked as a framework package's ("[torch] file:line:fn").
bool IsMarkedFrameworkFrame(std::string_view frame);
// The first frame of `stack` ("file:line:function" lines, innermost first) outside the
// framework; "" when every frame is the framework's.
std::string UserFrame(std::string_view stack);

std::vector<ModuleRow> ModuleView(const Trace& t);
std::vector<MemoryPeakRow> MemoryPeaks(const Trace& t, const std::vector<StageResult>& stages);
// The out-of-memory reports of a trace (allocation slices flagged kSliceOutOfMemory, and
// "out of memory on <device> (<n> bytes asked): snapshot <path>" capture notes, joined by
// device within a second), in time order, each placed in its step and stage.
std::vector<OutOfMemoryRow> OutOfMemory(const Trace& t, const std::vector<StageResult>& stages);
std::vector<FrameRow> OpsByFrame(const Trace& t);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_CONTENTS_H_
