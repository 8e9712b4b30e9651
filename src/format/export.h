// Exporting captures to the files other tools open: Chrome trace JSON (.json / .json.gz),
// Perfetto protobuf (.pftrace) and SQLite (.db). One entry point picks the writer.
//
//   RLPROF_ASSIGN_OR_RETURN(ExportFormat f, ExportFormatFromPath("out.json.gz"));
//   RLPROF_ASSIGN_OR_RETURN(ExportStats s, ExportCaptures(captures, f, "out.json.gz"));
//   printf("%llu events, %llu bytes\n", s.events, s.bytes);
//
// Every writer writes to a temporary file renamed into place on success (no half files),
// and counts what it could not represent in ExportStats instead of failing.
// Thread-safety: the functions are reentrant.
#ifndef RLPROF_SRC_FORMAT_EXPORT_H_
#define RLPROF_SRC_FORMAT_EXPORT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/format/export_format.h"
#include "src/base/status.h"
#include "src/format/capture.h"
#include "src/format/diagnostics.h"

namespace rlprof::format {

// "json" | "pftrace" | "db" (also "chrome", "perfetto", "sqlite", and a config's "text").
base::StatusOr<ExportFormat> ParseExportFormat(std::string_view name);
// From the output's extension: .json/.json.gz → json, .pftrace/.perfetto-trace/.pb → pftrace,
// .db/.sqlite/.sqlite3 → db.
base::StatusOr<ExportFormat> ExportFormatFromPath(std::string_view path);

struct ExportStats {
  uint64_t events = 0;          // trace events written (not counting metadata / descriptors)
  uint64_t bytes = 0;           // size of the file on disk
  uint64_t skipped_events = 0;  // could not be represented (negative duration, NaN counter …)
  uint64_t clipped_slices = 0;  // complete events shortened to nest inside their parent
  uint64_t unmatched_async = 0; // async begin without end or end without begin
  Diagnostics diagnostics;      // export_* counts (src/format/diagnostics.h)
};

// Where the text/bytes of an export go (a file, or a string in tests).
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void Write(std::string_view bytes) = 0;
};

class StringSink final : public ByteSink {
 public:
  void Write(std::string_view bytes) override { data.append(bytes); }
  std::string data;
};

// Level of detail for a merged run timeline (`rlprof export RUN --detail-ranks … --detail-steps
// …`): every capture keeps its step and stage ranges (categories step, stage, sub_step, capture)
// so the whole run reads on one timeline; operators, device work, communication, counters and
// every other event are kept only on the ranks in `ranks` and inside the steps in `steps` (an
// empty list: all of them). `stages_only` keeps detail nowhere. Tracks left without events are
// dropped too, so a rank-step without detail costs a few hundred bytes (docs/scale.md).
struct LevelOfDetail {
  std::vector<int64_t> ranks;  // empty: every rank
  std::vector<int64_t> steps;  // empty: every step
  bool stages_only = false;
  bool active() const { return stages_only || !ranks.empty() || !steps.empty(); }
};

// Applies `lod` to `captures` in place; returns the number of events left out. A step is
// the step range (category step) an event starts in, else the capture's first step
// (manifest.steps, as a discrete capture names it).
uint64_t ApplyLevelOfDetail(const LevelOfDetail& lod, std::vector<Capture>* captures);

base::StatusOr<ExportStats> ExportCaptures(std::span<const Capture> captures, ExportFormat format,
                                           const std::string& path);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_EXPORT_H_
