// How captures are laid out as processes and threads in a trace viewer, shared by the Chrome
// JSON and Perfetto writers so both show the same picture:
//   * one host process per (host, pid) — named by the capture's label ("rank 0 [actor] h
//     (pid 123)") and sorted by role (rollout, ref, actor, critic, reward, others; only when
//     the captures have more than one role) then rank — holding its thread, counter and async
//     tracks;
//   * one process per (host process, device) for device streams ("rank 0 GPU 1"), sorted
//     after the hosts, one thread per stream;
//   * times aligned to rank 0 (offset_to_rank0_ns) and made relative to `base_ns`, the
//     earliest event of all captures.
//
//   TraceLayout layout = BuildTraceLayout(captures);
//   const TrackLayout& t = layout.Track(capture_index, event.track);
//   int64_t pid = layout.processes[t.process].pid;
//
// Thread-safety: a built layout is immutable.
#ifndef RLPROF_SRC_FORMAT_TRACE_LAYOUT_H_
#define RLPROF_SRC_FORMAT_TRACE_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/format/capture.h"

namespace rlprof::format {

struct ProcessLayout {
  int64_t pid = 0;           // as written (OS pid, or a synthetic id for devices/collisions)
  std::string name;          // process_name
  std::string label;         // "CPU" or "GPU <n>" (Kineto's process_labels)
  int64_t sort_index = 0;
  bool device = false;
  int64_t rank = -1;
  int64_t role_group = 0;    // processes are grouped by role (rollout, ref, actor, …), then rank
};

struct TrackLayout {
  size_t process = 0;  // index into TraceLayout::processes
  int64_t tid = 0;     // thread id, or stream number for device streams
  std::string name;    // thread_name / track name
  TrackKind kind = TrackKind::kThread;
  int64_t sort_index = 0;
  bool defined = true;  // false: an id events use but the capture never defined
};

struct CaptureLayout {
  size_t host_process = 0;
  int64_t offset_ns = 0;  // added to event times (alignment to rank 0)
  std::unordered_map<uint16_t, TrackLayout> tracks;
};

struct TraceLayout {
  std::vector<ProcessLayout> processes;
  std::vector<CaptureLayout> captures;
  int64_t base_ns = 0;           // earliest aligned event time (0 without events)
  int64_t base_realtime_ns = 0;  // wall-clock time of base_ns, 0 when no capture has anchors

  const TrackLayout& Track(size_t capture, uint16_t track) const {
    return captures[capture].tracks.at(track);
  }
};

// Every track id used by an event gets a TrackLayout, defined or not.
TraceLayout BuildTraceLayout(std::span<const Capture> captures);

// Launch flows (CPU runtime call → device kernel, Kineto's `ac2g`): the correlation ids that
// occur on both a complete kRuntime event and a complete kKernel event of the capture.
enum class FlowEnd { kNone, kSource, kSink };
class LaunchFlows {
 public:
  explicit LaunchFlows(const Capture& c);
  // Whether `e` starts (runtime call) or ends (kernel) a flow; its correlation is e.arg0.
  FlowEnd Role(const Event& e) const;
  size_t size() const { return linked_.size(); }

 private:
  std::unordered_map<uint32_t, bool> linked_;  // correlation → has both ends
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_TRACE_LAYOUT_H_
