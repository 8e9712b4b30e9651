// The body shared by the trace-reader fuzz targets (kineto_json, torch_legacy_json,
// ascend_json, rlp_file, rlp_chunks): the bytes go through analysis::ReadTraceBytes, the
// in-memory twin of ReadTrace (format detection, gzip, JSON repair, capture → Trace,
// Trace::Finalize). The JSON targets differ in their seeds and dictionaries, which steer
// libFuzzer into one dialect each. An error Status is fine; a crash, a sanitizer report or a
// finalized Trace that breaks its documented invariants (trace.h) is a finding.
#ifndef RLPROF_TEST_FUZZ_TRACE_FUZZ_UTIL_H_
#define RLPROF_TEST_FUZZ_TRACE_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"

namespace rlprof::fuzz {

inline void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
  std::abort();
}

// What trace.h promises of a finalized Trace.
inline void CheckTrace(const analysis::Trace& t) {
  const size_t n = t.size();
  Require(t.dur.size() == n && t.name.size() == n && t.category.size() == n &&
              t.track.size() == n && t.kind.size() == n && t.correlation.size() == n &&
              t.shapes.size() == n && t.bytes.size() == n && t.group.size() == n &&
              t.collective.size() == n && t.parent.size() == n,
          "slice columns of equal length");
  const size_t strings = t.strings.size();
  for (size_t i = 0; i < n; ++i) {
    Require(t.track[i] < t.tracks.size(), "slice track is an index into tracks");
    Require(t.name[i] < strings && t.category[i] < strings && t.shapes[i] < strings &&
                t.group[i] < strings && t.collective[i] < strings,
            "slice string ids are interned");
    Require(t.parent[i] >= -1 && t.parent[i] < static_cast<int64_t>(n), "parent is a row or -1");
    if (t.parent[i] >= 0) {
      Require(t.track[static_cast<size_t>(t.parent[i])] == t.track[i], "parent on the same track");
    }
  }
  for (const auto& m : t.steps) Require(m.track < t.tracks.size(), "step marker track");
  for (const auto& m : t.stages) Require(m.track < t.tracks.size(), "stage marker track");
  for (const auto& c : t.counters) Require(c.track < t.tracks.size(), "counter track");
}

inline void ReadTraceInput(std::string_view bytes, const char* name) {
  // Instants kept on odd sizes only: both paths of ReadOptions::keep_instants get exercised.
  analysis::ReadOptions opts;
  opts.keep_instants = bytes.size() % 2 == 1;
  auto trace = analysis::ReadTraceBytes(bytes, name, opts);
  if (trace.ok()) CheckTrace(*trace);
}

}  // namespace rlprof::fuzz

#endif  // RLPROF_TEST_FUZZ_TRACE_FUZZ_UTIL_H_
