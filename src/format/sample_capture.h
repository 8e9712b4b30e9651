// Small constructed captures for tests, goldens and benchmarks (never a binary blob):
// every kind of event, every track kind, hostile strings, nesting that needs clipping.
//
//   std::vector<Capture> caps = SampleCaptures();        // rank 0 and rank 1
//   Status s = WriteSampleCaptureDir(dir, caps[0]);      // manifest.json + events.rlp
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_FORMAT_SAMPLE_CAPTURE_H_
#define RLPROF_SRC_FORMAT_SAMPLE_CAPTURE_H_

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/format/capture.h"

namespace rlprof::format {

// Names that break naive writers: quotes, backslashes, newlines, control characters, NUL,
// invalid UTF-8, valid non-ASCII, a JSON-looking name and a very long one.
std::vector<std::string> HostileNames();

// Two captures (rank 0 with threads, a device stream, counters, async ranges and every
// category; rank 1 smaller, offset to rank 0). Events are sorted.
std::vector<Capture> SampleCaptures();

// A capture with three samples' records (category sample, src/runtime/sample_source.h) on one
// "samples" track: samples A and B overlap, C starts after A ends; each has a decode phase.
Capture SamplesCapture();

// A capture with `n` generated events on a few tracks (benchmarks, large tests).
Capture GeneratedCapture(size_t n);

// Writes `c` as a capture directory (manifest.json + events.rlp) under `dir`.
base::Status WriteSampleCaptureDir(const std::string& dir, const Capture& c);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_SAMPLE_CAPTURE_H_
