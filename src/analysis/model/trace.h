// The analysis trace model: one rank's trace, columnar, int64 nanoseconds, interned strings.
// Every reader (rlprof captures, Kineto / torch.profiler JSON, legacy torch JSON, Ascend
// trace_view.json) produces a Trace; every analysis (classification, windows, the atomic
// partition, views, operator statistics, compare, cluster) consumes Traces.
//
//   Trace t;
//   uint32_t th = t.AddTrack({TrackType::kThread, /*pid=*/1, /*tid=*/7, -1, -1, "main", "rank0"});
//   t.AddSlice(/*ts=*/1000, /*dur=*/500, t.Intern("aten::mm"), t.Intern("cpu_op"), th);
//   t.Finalize();   // sorts slices by (track, ts, -dur) and fills `parent`
//
// Thread-safety: a Trace is built by one thread, then read-only (share freely).
#ifndef RLPROF_SRC_ANALYSIS_MODEL_TRACE_H_
#define RLPROF_SRC_ANALYSIS_MODEL_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "src/format/diagnostics.h"

namespace rlprof::analysis {

enum class TrackType : uint8_t {
  kThread = 0,        // host thread (pid, tid)
  kDeviceStream = 1,  // GPU / NPU stream (device, stream)
  kCounter = 2,       // counter series
  kAsync = 3,         // async ranges not bound to one thread
};

struct Track {
  TrackType type = TrackType::kThread;
  int64_t pid = 0;
  int64_t tid = 0;
  int32_t device = -1;
  int64_t stream = -1;
  std::string name;          // thread / stream name
  std::string process_name;  // process label
};

// Trace::flags bits.
inline constexpr uint8_t kSliceNoStreamArg = 1;                 // a JSON event without args.stream
inline constexpr uint8_t kSliceCorrelationFromExternalId = 2;   // correlation is its "External id"
inline constexpr uint8_t kSliceFlowPairLinked = 4;  // the end of an "ac2g" flow pair (TraceLens's link)
inline constexpr uint8_t kSliceOutOfMemory = 8;     // an allocation the allocator could not satisfy

// What a slice is, as far as the reader can tell (the classifier refines it).
enum class SliceKind : uint8_t {
  kRange = 0,    // a complete range (dur ≥ 0)
  kInstant = 1,  // a mark (dur = 0)
};

// Named counts of everything a reader or analysis had to skip, repair or guess, from the one
// catalogue (src/format/diagnostics.h). Shown in every output; never silently dropped.
using Diagnostics = format::Diagnostics;

class StringTable {
 public:
  StringTable() { Intern(""); }
  uint32_t Intern(std::string_view s);
  // The id of `s` if interned, else 0 (the id of "").
  uint32_t Find(std::string_view s) const {
    auto it = index_.find(std::string(s));
    return it == index_.end() ? 0 : it->second;
  }
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> index_;
};

// A step or stage marker found in the trace (before windows are computed).
struct Marker {
  int64_t step = 0;       // RL step (or ProfilerStep#k), 0 if unknown
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t track = 0;
  std::string role;       // stage markers: role, if known
  std::string name;       // stage name, or "ProfilerStep#k" / "step"
};

struct CounterSample {
  uint32_t track = 0;
  int64_t ts_ns = 0;
  double value = 0;
  uint32_t name = 0;  // string id of the series ("rss_bytes", "allocated_bytes cpu"; "" unknown)
};

// A generated sample's life (issue 33; rlprof captures' kSample events, AReaL session traces):
// times in ns on the trace's timeline, -1 unknown; counts -1 unknown.
struct SampleSpan {
  std::string phase, label;  // "tool" + the tool's name, "reward", …
  int64_t start = -1, end = -1;
};
struct SampleRecord {
  std::string id, group, finish_reason;
  int64_t submit = -1, queued = -1, scheduled = -1, first_token = -1, last_token = -1, end = -1;
  int64_t prompt_tokens = -1, completion_tokens = -1, cached_tokens = -1, preemptions = -1;
  int64_t version_first = -1, version_last = -1;
  int64_t replica = -1;  // -1: the process's own rank
  int64_t step = -1;     // the RL step it was made in (analysis: the step containing its end)
  std::vector<SampleSpan> spans;
};
// What became of a sample (rlprof.sample_use): consumed by a step, or dropped and why.
struct SampleUse {
  std::string id, outcome;
  int64_t at = -1, step = -1, version = -1;
};

struct Trace {
  // Identity.
  std::string source;  // file or capture directory
  std::string format;  // "rlprof" | "kineto" | "torch-legacy" | "ascend"
  int64_t rank = -1;
  int64_t world_size = -1;
  std::string host;
  int64_t pid = -1;
  std::string role;  // the capture's role(s), "actor" or "actor,ref" (rlprof manifests); "" unknown
  // Capture bounds (ns) when the source records them (rlprof manifest window); -1 unknown.
  // Steps whose window reaches outside them are flagged partial.
  int64_t capture_start_ns = -1;
  int64_t capture_end_ns = -1;
  // Wall clock (Unix ns) = a time of this trace + wall_offset_ns (rlprof manifests' realtime
  // anchor); INT64_MIN unknown.
  int64_t wall_offset_ns = INT64_MIN;
  // rlprof captures whose window opens inside the step or stage (discrete, sampled): the
  // reader stood in the step / stage marker from the manifest, spanning the capture window.
  // Such a step is not the step's real time; such a stage is only its sampled part.
  bool step_is_capture_window = false;
  bool stage_is_capture_window = false;
  // Without step markers the whole trace is step 0; true: that step spans the compute and
  // communication work only (Ascend databases: msprof's step_trace_time E2E), not every event.
  bool whole_trace_is_work_span = false;
  // The share of operator calls the trace holds (rlprof captures with `ops_sampling`; 1 = every
  // one): operator statistics scale counts and times by 1 / ops_sampling (op_stats.cc).
  double ops_sampling = 1.0;

  StringTable strings;
  std::vector<Track> tracks;

  // Slices, one row per event (columns of equal length).
  std::vector<int64_t> ts;            // ns
  std::vector<int64_t> dur;           // ns (0 for instants)
  std::vector<uint32_t> name;         // string id
  std::vector<uint32_t> category;     // string id of the category as written ("" if none)
  std::vector<uint32_t> track;        // index into tracks
  std::vector<SliceKind> kind;
  std::vector<int64_t> correlation;   // launch ↔ kernel correlation id, -1 if none
  std::vector<uint32_t> shapes;       // string id of input shapes ("" if none)
  std::vector<int64_t> bytes;         // bytes moved (collectives, copies), -1 if unknown
  std::vector<uint32_t> group;        // string id of the process group ("" if none)
  std::vector<uint32_t> collective;   // string id of the collective name arg ("recv", "" if none)
  // string id of what a framework content adds ("" if none): an operator's Python call stack
  // (frames "file:line:function", innermost first, '\n'-joined), a module range's class, an
  // allocation's operator.
  std::vector<uint32_t> detail;
  // External correlation id (CUPTI external correlation, rlprof captures): a host operator's
  // own id, and on a device launch (runtime API call) and the device work it launched the id
  // of the operator that launched it; -1 if none. LaunchingOperators() (classify.h) joins them.
  std::vector<int64_t> external;
  // What the reader saw of a device event's args that the correlation and track columns merge
  // away (kSlice* bits; 0 when unknown): HTA keys kernels by `args.stream` and `args.correlation`
  // alone (hta_compat.cc).
  std::vector<uint8_t> flags;
  std::vector<int32_t> parent;        // enclosing slice on the same track, -1 (Finalize)

  std::vector<Marker> steps;          // step markers
  std::vector<Marker> stages;         // stage markers (RL stages)
  std::vector<CounterSample> counters;
  std::vector<SampleRecord> samples;    // in the order their records end
  std::vector<SampleUse> sample_uses;

  Diagnostics diagnostics;

  uint32_t Intern(std::string_view s) { return strings.Intern(s); }
  const std::string& str(uint32_t id) const { return strings.Get(id); }
  uint32_t AddTrack(Track t);
  // Finds or adds the track with this (type, pid, tid) / (type, device, stream).
  uint32_t ThreadTrack(int64_t pid, int64_t tid);
  uint32_t StreamTrack(int32_t device, int64_t stream);
  // Appends a slice; returns its row. A time outside ±2^62 ns is clamped ("time_clamped"), a
  // negative duration becomes 0 ("negative_duration"), a duration reaching past +2^62 ns is
  // shortened ("duration_clamped"): ts + dur never overflows downstream.
  size_t AddSlice(int64_t ts_ns, int64_t dur_ns, uint32_t name_id, uint32_t category_id,
                  uint32_t track_id, SliceKind k = SliceKind::kRange);
  size_t size() const { return ts.size(); }
  // Room for `n` slices in every per-slice column (readers that know about how many events
  // are coming: no column grows by copying).
  void Reserve(size_t n);
  // Sorts slices by (track, ts, -dur), fills `parent` by nesting per track, sorts markers.
  // Counts overlapping-but-not-nested slices on one track as "improper_nesting".
  void Finalize();

 private:
  std::map<std::tuple<int, int64_t, int64_t>, uint32_t> track_index_;
};

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_MODEL_TRACE_H_
