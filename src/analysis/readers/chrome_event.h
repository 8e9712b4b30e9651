// One Chrome trace event as the JSON reader extracted it (internal to the readers): the
// fields rlprof uses, already converted (ns timestamps, integer ids), with string views into
// the parser's buffers (valid until the next chunk is parsed).
//
// Thread-safety: plain data.
#ifndef RLPROF_SRC_ANALYSIS_READERS_CHROME_EVENT_H_
#define RLPROF_SRC_ANALYSIS_READERS_CHROME_EVENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlprof::analysis {

// A pid / tid / id: a number, or a string (kept as text).
struct JsonId {
  bool present = false;
  bool is_string = false;
  int64_t num = 0;
  std::string_view text;
};

struct JsonEvent {
  std::string_view ph;
  std::string_view name;
  std::string_view cat;
  bool has_name = false;
  bool has_ts = false, bad_ts = false, string_ts = false;
  int64_t ts = 0;
  bool has_dur = false, bad_dur = false;
  int64_t dur = 0;
  JsonId pid, tid, id;
  char scope = 0;             // "s": g / p / t
  bool bind_enclosing = false;  // "bp": "e"
  // args
  int64_t correlation = -1, external_id = -1, device = -1, stream = -1;
  int64_t bytes = -1, nelems = -1, sort_index = -1;
  // Kineto's "[memory]" instants (profile_memory): the allocator's totals after the event and
  // its device ("Device Type": c10's DeviceType, 0 CPU, 1 CUDA; "Device Id" goes to `device`).
  int64_t total_allocated = -1, total_reserved = -1, device_type = -1;
  std::string_view dtype, shapes, group_name, group_ranks, arg_name, labels, collective_name;
  std::vector<std::pair<std::string, double>> series;  // counter values ("C")
  uint32_t bad_values = 0;    // args values of the wrong type, ignored
  std::string shapes_buf, ranks_buf;  // storage for compacted JSON
  std::vector<std::string> owned;     // storage for args read out of order (rare)

  void Clear() {
    ph = name = cat = {};
    has_name = has_ts = bad_ts = string_ts = has_dur = bad_dur = false;
    ts = dur = 0;
    pid = tid = id = JsonId();
    scope = 0;
    bind_enclosing = false;
    correlation = external_id = device = stream = bytes = nelems = sort_index = -1;
    total_allocated = total_reserved = device_type = -1;
    dtype = shapes = group_name = group_ranks = arg_name = labels = collective_name = {};
    series.clear();
    bad_values = 0;
  }
};

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_CHROME_EVENT_H_
