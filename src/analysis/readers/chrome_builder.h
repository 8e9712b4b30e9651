// Builds a Trace from Chrome trace events (internal to the readers): maps pids/tids (numbers or
// strings) to tracks, Kineto device categories to device streams, pairs B/E per track and b/e
// per (cat, id), collects counters, metadata names, flows (bound to slices as correlation ids
// after sorting), ProfilerStep#N step markers and RL stage markers.
//
//   ChromeTraceBuilder b(&trace, opts);
//   for (…) b.Add(event);
//   b.Finish();   // names tracks, closes what never ended (counted), Finalize()s the trace
//
// Thread-safety: one builder per thread.
#ifndef RLPROF_SRC_ANALYSIS_READERS_CHROME_BUILDER_H_
#define RLPROF_SRC_ANALYSIS_READERS_CHROME_BUILDER_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/analysis/readers/chrome_event.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

// string_view-keyed interning in front of Trace::Intern (which allocates per lookup). Strings
// longer than kMaxNameBytes are truncated (counted as "name_truncated").
class FastInterner {
 public:
  static constexpr size_t kMaxNameBytes = 1u << 20;  // as format::kRawMaxStringBytes
  explicit FastInterner(Trace* t) : trace_(t) {}
  uint32_t Intern(std::string_view s);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  Trace* trace_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  // Direct-mapped cache in front of the hash map: traces repeat the same few names.
  struct Recent {
    std::string text;
    uint32_t id = UINT32_MAX;
  };
  std::array<Recent, 256> recent_{};
};

// `s`, or its first FastInterner::kMaxNameBytes (on a UTF-8 boundary), counting "name_truncated".
std::string_view TruncateName(std::string_view s, Diagnostics* diag);

// What a slice's name says it is, for markers.
struct MarkerName {
  enum Kind { kNone, kProfilerStep, kRlStep, kStage } kind = kNone;
  int64_t step = 0;      // ProfilerStep#N: N; rl/step#N: N (else -1: numbered by order)
  std::string stage;     // kStage: the stage name (without an "rl/" prefix)
};
// Classifies a range name; `cat` decides whether bare verl timer names count.
MarkerName ClassifyMarkerName(std::string_view name, std::string_view cat);

// Bytes per element of a torch dtype name ("BFloat16", "float32", "c10::Half" …); 0 if unknown.
int DtypeBytes(std::string_view dtype);

class ChromeTraceBuilder {
 public:
  ChromeTraceBuilder(Trace* trace, const ReadOptions& opts);
  void Reserve(size_t events);
  void Add(const JsonEvent& e);
  // Legacy torch JSON: no categories; names with "::" or a "gloo:"/"nccl:" prefix are cpu_op,
  // the rest user_annotation.
  void set_legacy(bool v) { legacy_ = v; }
  // GPU names from Kineto's deviceProperties.
  void SetDeviceName(int64_t id, std::string name) { device_names_[id] = std::move(name); }
  // A GPU's memory (Kineto's deviceProperties totalGlobalMem): the "capacity_bytes cuda:<id>"
  // counter at the trace's first time, which the memory views and the advisor read.
  void SetDeviceMemory(int64_t id, int64_t bytes) { device_memory_[id] = bytes; }
  bool saw_string_ts() const { return string_ts_ > 0; }
  bool saw_cpu_functions_pid() const { return cpu_functions_pid_; }
  const std::map<int64_t, std::string>& process_names() const { return proc_names_; }
  void Finish();

 private:
  struct Open {
    int64_t ts;
    uint32_t name, cat;
    int64_t correlation, bytes;
    uint32_t shapes, group;
  };
  struct FlowPoint {
    int64_t pid, tid;  // resolved at bind time: a thread, else the device stream (Kineto)
    int64_t ts;
    int64_t id;
    bool enclosing;
    char ph = 0;        // 's', 't' or 'f'
    bool ac2g = false;  // category "ac2g" (Kineto's launch → device link)
  };
  int64_t ResolveId(const JsonId& id, bool is_pid, int64_t pid_for_tid);
  uint32_t TrackFor(const JsonEvent& e, uint32_t cat_id, int64_t* pid_out);
  uint32_t AsyncTrack(int64_t pid, uint32_t name_id);
  uint32_t CategoryId(std::string_view cat);
  void AddRange(const JsonEvent& e, int64_t ts, int64_t dur, uint32_t name, uint32_t cat,
                uint32_t track, SliceKind kind, int64_t corr, int64_t bytes, uint32_t shapes,
                uint32_t group);
  void AddMarker(int64_t ts, int64_t dur, uint32_t name, uint32_t cat, uint32_t track);
  void Metadata(const JsonEvent& e);
  void Counter(const JsonEvent& e);
  // One value of a named series on a counter track of `pid` (named so the memory views find it).
  void CounterValue(int64_t pid, const std::string& label, int64_t ts, double value, bool named);
  // Kineto's "[memory]" instant: an allocation slice and the allocator's totals as counters.
  void MemoryEvent(const JsonEvent& e, int64_t pid, uint32_t track);
  // Add's phases: async begin/end/instant (b e n) on an async track; flow (s t f) ends, bound later.
  void AsyncEvent(const JsonEvent& e, char ph, int64_t pid, const Open& here);
  void FlowEvent(const JsonEvent& e, char ph, int64_t pid, uint32_t cat);
  void BindFlows();
  void NameTracks();
  void ClampOverhangs();
  bool legacy() const { return legacy_; }
  std::string_view Capped(std::string_view s) { return TruncateName(s, &t_->diagnostics); }

  Trace* t_;
  ReadOptions opts_;
  FastInterner strings_;
  bool legacy_ = false;
  bool cpu_functions_pid_ = false;
  uint64_t string_ts_ = 0;
  uint32_t cat_cpu_op_ = 0, cat_user_annotation_ = 0, cat_python_function_ = 0, cat_kernel_ = 0,
           cat_cuda_runtime_ = 0;
  uint32_t cat_allocation_ = UINT32_MAX;  // interned at the first "[memory]" event
  std::vector<bool> device_cat_;  // by category string id: Kineto device activity
  std::unordered_map<std::string, int64_t> string_ids_;  // pid/tid strings → synthetic ints
  std::map<int64_t, std::string> id_labels_;             // synthetic int → its string
  std::map<int64_t, std::string> proc_names_, proc_labels_;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  std::map<int64_t, std::string> device_names_;
  std::map<int64_t, int64_t> device_memory_;
  int64_t first_ts_ = INT64_MAX;  // the earliest event time seen (capacity counters' time)
  std::unordered_map<uint32_t, std::vector<Open>> open_b_;         // per track
  std::unordered_map<std::string, std::vector<Open>> open_async_;  // per (cat, id)
  std::map<std::pair<int64_t, uint32_t>, uint32_t> async_tracks_;
  std::map<std::tuple<int64_t, std::string>, uint32_t> counter_tracks_;
  std::unordered_map<std::string, int64_t> flow_string_ids_;
  std::vector<FlowPoint> flows_;
  std::map<int64_t, uint64_t> host_pid_slices_;
  int64_t rl_steps_ = 0;
  std::array<std::pair<std::string, uint32_t>, 4> recent_cats_{};  // ("" → 0 is right too)
  size_t recent_next_ = 0;
  // Marker classification per name id (0 = not yet known), for op-like and other categories.
  std::vector<uint8_t> marker_cache_[2];
  std::vector<MarkerName> marker_names_;  // index = cache value - 2
  // Cache of the last (pid, tid, device?) → track.
  int64_t last_pid_ = INT64_MIN, last_tid_ = INT64_MIN;
  bool last_dev_ = false;
  uint32_t last_track_ = 0;
};

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_CHROME_BUILDER_H_
