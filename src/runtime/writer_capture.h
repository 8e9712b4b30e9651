// The writer's record of one open capture (private to the writer: writer.cc and
// writer_manifest.cc). Touched only on the writer thread.
#ifndef RLPROF_SRC_RUNTIME_WRITER_CAPTURE_H_
#define RLPROF_SRC_RUNTIME_WRITER_CAPTURE_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/format/raw.h"
#include "src/runtime/clock.h"
#include "src/runtime/writer.h"

namespace rlprof::runtime {

struct Writer::Capture {
  WindowOpen info;
  std::string dir;
  std::unique_ptr<format::RawWriter> raw;
  TickConverter conv;
  ClockSample anchor;
  int64_t open_ns = 0;
  std::vector<bool> string_emitted;  // by id: in this capture's string table already
  std::vector<bool> track_emitted;
  std::set<uint16_t> threads;
  std::vector<format::Event> batch;
  uint64_t events = 0;         // accepted by the RawWriter (on disk once it is closed cleanly)
  uint64_t dropped_full = 0;
  uint64_t dropped_budget = 0;
  uint64_t lost_on_error = 0;  // drained after the capture failed: never handed to the file
  uint64_t unflushed = 0;
  int64_t last_flush_ns = 0;
  bool over_budget = false;
  bool budget_reported = false;
  bool failed = false;
  size_t manifest_bytes = 0;  // size of the open-time manifest on disk (0: none written)
  bool created = false;    // CreateOnDisk was run (dir, raw and maybe the manifest exist)
  bool finishing = false;  // FinishCapture is draining it: create it now, without an open manifest
  uint64_t manifest_events = 0;      // counts.events of the manifest on disk
  int64_t manifest_written_ns = 0;   // when the open or progress manifest was last written
  int64_t max_end_ns = INT64_MIN;  // latest event end written
  uint64_t source_events = 0;      // emitted by sources through the sink (drops included)
  std::vector<std::string> errors;
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_WRITER_CAPTURE_H_
