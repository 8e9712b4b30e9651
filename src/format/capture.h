// Loading captures: a capture directory (manifest.json + events.rlp, see docs/formats.md) or
// a bare events.rlp becomes a Capture with its events sorted by time; a tree of capture
// directories (a run, a step, a whole save_path) becomes a list of them. Loading is lenient:
// missing or ill-typed manifest keys, damaged chunks and unreadable sub-directories are
// counted in `diagnostics`, never fatal, unless nothing at all could be read.
//
//   RLPROF_ASSIGN_OR_RETURN(Capture c, LoadCapture("runs/r1/step2/e2e/rank0-h-123"));
//   for (const Event& e : c.raw.events) { … c.raw.str(e.name) … }
//   RLPROF_ASSIGN_OR_RETURN(CaptureSet all, LoadCaptureTree("runs/r1"));
//
// Thread-safety: the functions are reentrant; a Capture is a plain value.
#ifndef RLPROF_SRC_FORMAT_CAPTURE_H_
#define RLPROF_SRC_FORMAT_CAPTURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/format/diagnostics.h"
#include "src/format/manifest.h"
#include "src/format/raw.h"

namespace rlprof::format {

struct Capture {
  std::string dir;  // the capture directory ("" when loaded from a bare events.rlp)
  std::string events_path;
  bool has_manifest = false;
  Manifest manifest;  // identity fields filled from the events header when the manifest lacks them
  RawCapture raw;     // events sorted by (ts, longer first); times valid (base/time_math.h)
  // Everything loading had to skip, repair or clamp, by catalogue name (src/format/
  // diagnostics.h): raw_* counts of events.rlp, manifest problems, times out of range. The
  // details say which file and why ("manifest.json: identity.rank: expected an integer").
  Diagnostics diagnostics;
  bool times_checked = false;  // SanitizeCaptureTimes has run (LoadCapture does it)

  // "rank 0 [actor] host (pid 123)"
  std::string Label() const;
};

struct CaptureSet {
  std::vector<Capture> captures;  // ordered by (rank, directory)
  Diagnostics diagnostics;        // directories that could not be loaded ("unreadable_inputs"), and why
};

// `path` is a capture directory or an events.rlp file. NotFound when the path does not exist
// or holds neither file; InvalidArgument when a bare events file is not an rlprof file. A
// capture directory whose manifest was read loads even when its events.rlp cannot be read (a
// directory, not an rlprof file, …): no events, counted as raw_events_unreadable.
//
// Times are made safe here, once, for every reader and writer: clock anchors and offsets
// outside ±2^62 ns are ignored (clock_offset_out_of_range), an inverted window is dropped
// (window_inverted), events whose time aligned to rank 0 (ts + offset_to_rank0_ns) is outside
// ±2^62 ns are dropped (time_out_of_range) and complete events are shortened to end within
// the range (duration_clamped). So ts + offset + duration never overflows downstream.
base::StatusOr<Capture> LoadCapture(const std::string& path);

// A bare events.rlp already in memory (`name` stands for its path), loaded as LoadCapture
// loads the file: InvalidArgument when the bytes are not an rlprof file.
base::StatusOr<Capture> LoadCaptureBytes(std::string_view events_rlp, const std::string& name);

// Adds the named raw_* counts of `raw` (and name_truncated) to `out`.
void AddRawDiagnostics(const RawDiagnostics& raw, Diagnostics* out);

// What the manifest and the events file say was lost or left open while capturing —
// capture_incomplete, dropped_events, events_lost_write_error, truncated_input — added to
// `out`: every command that reads a capture reports them (analysis through TraceFromCapture,
// export directly).
void AddCaptureLossDiagnostics(const Capture& c, Diagnostics* out);

// The time checks of LoadCapture, for captures built in memory: sanitises the manifest's clock
// fields and window and the events' times, counting into c->diagnostics.
void SanitizeCaptureTimes(Capture* c);

// Every directory at or below `root` that contains manifest.json or events.rlp, sorted.
// Folders that cannot be listed are counted in `diag` (input_unreadable_dir), when given.
// Whether `path` — and, for a capture directory, its manifest.json and events.rlp, each of
// which may be a link of its own — resolves inside `root` (canonical): what `rlprof serve`
// reads of a run, nothing reached through a link out of it.
bool ResolvesInsideWithCaptureFiles(const std::string& path, const std::string& root);
std::vector<std::string> FindCaptureDirs(const std::string& root, Diagnostics* diag = nullptr);

// Loads every capture below `root`. NotFound when there is none.
base::StatusOr<CaptureSet> LoadCaptureTree(const std::string& root);

// Sorts events by time; at equal time the longer complete event first (parents before children).
void SortEventsByTime(std::vector<Event>* events);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_CAPTURE_H_
