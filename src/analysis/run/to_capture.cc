#include "src/analysis/run/to_capture.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace rlprof::analysis {
namespace {

using format::Category;

uint32_t Saturate(int64_t v) {
  if (v < 0) return 0;
  return v > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                  : static_cast<uint32_t>(v);
}

Category CategoryOf(const Trace& t, const Classification& c, size_t i) {
  const bool device = t.tracks[t.track[i]].type == TrackType::kDeviceStream;
  switch (c.of[i]) {
    case WorkClass::kCommunication: return Category::kCommunication;
    case WorkClass::kMemcpy: return Category::kMemcpy;
    case WorkClass::kMemset: return Category::kMemset;
    case WorkClass::kSync: return Category::kSync;
    case WorkClass::kMarker: return Category::kUser;
    case WorkClass::kCompute:
    case WorkClass::kUnclassified: return device ? Category::kKernel : Category::kOperator;
    case WorkClass::kHost:
      if (device) return Category::kKernel;
      return IsRuntimeCategory(t.str(t.category[i])) ? Category::kRuntime : Category::kOperator;
  }
  return Category::kUser;
}

}  // namespace

format::Capture CaptureFromTrace(const Trace& t, const Classifier& cls) {
  format::Capture cap;
  cap.events_path = t.source;
  cap.has_manifest = false;
  format::Manifest& m = cap.manifest;
  m.format = "rlprof-capture";
  m.scope = t.format;
  m.rank = t.rank;
  m.world_size = t.world_size > 0 ? t.world_size : 0;
  m.host = t.host;
  m.pid = t.pid > 0 ? t.pid : 0;
  m.complete = true;

  format::RawCapture& raw = cap.raw;
  raw.info.rank = t.rank;
  raw.info.pid = t.pid > 0 ? static_cast<uint32_t>(t.pid) : 0;
  raw.info.host = t.host;
  raw.strings.reserve(t.strings.size() + t.tracks.size());
  for (size_t i = 0; i < t.strings.size(); ++i) raw.strings.push_back(t.strings.Get(static_cast<uint32_t>(i)));
  if (raw.strings.empty()) raw.strings.push_back("");

  // Tracks: ids 1..n (uint16 in the format); the rest cannot be represented.
  constexpr size_t kMaxTracks = std::numeric_limits<uint16_t>::max();
  std::vector<uint16_t> track_id(t.tracks.size(), 0);
  uint64_t dropped_tracks = 0;
  for (size_t k = 0; k < t.tracks.size(); ++k) {
    if (raw.tracks.size() >= kMaxTracks) {
      ++dropped_tracks;
      continue;
    }
    const Track& tr = t.tracks[k];
    format::TrackEntry e;
    e.id = static_cast<uint16_t>(raw.tracks.size() + 1);
    e.pid = static_cast<uint32_t>(tr.type == TrackType::kDeviceStream ? std::max<int64_t>(0, tr.device)
                                                                      : std::max<int64_t>(0, tr.pid));
    e.name = tr.name;
    switch (tr.type) {
      case TrackType::kDeviceStream:
        e.kind = format::TrackKind::kDeviceStream;
        e.os_id = (static_cast<uint64_t>(static_cast<uint32_t>(std::max(0, tr.device))) << 32) |
                  static_cast<uint32_t>(std::max<int64_t>(0, tr.stream));
        break;
      case TrackType::kCounter:
        e.kind = format::TrackKind::kCounter;
        break;
      default:  // threads, and async ranges shown as a thread of their own
        e.kind = format::TrackKind::kThread;
        e.os_id = static_cast<uint64_t>(tr.type == TrackType::kThread ? std::max<int64_t>(0, tr.tid)
                                                                      : 1000000 + k);
        break;
    }
    track_id[k] = e.id;
    raw.tracks.push_back(std::move(e));
  }

  const Classification c = cls.Classify(t, nullptr);
  raw.events.reserve(t.size() + t.counters.size());
  uint64_t skipped = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const uint16_t tr = track_id[t.track[i]];
    if (tr == 0 || t.dur[i] < 0) {
      ++skipped;
      continue;
    }
    format::Event e{};
    e.ts_ns = t.ts[i];
    e.name = t.name[i];
    e.track = tr;
    e.kind = t.kind[i] == SliceKind::kInstant ? format::EventKind::kInstant : format::EventKind::kComplete;
    e.payload = e.kind == format::EventKind::kComplete ? t.dur[i] : 0;
    e.category = CategoryOf(t, c, i);
    switch (e.category) {
      case Category::kCommunication:
        e.arg0 = Saturate(t.bytes[i]);
        e.arg1 = t.group[i];
        break;
      case Category::kMemcpy:
      case Category::kMemset:
        e.arg0 = Saturate(t.bytes[i]);
        break;
      case Category::kKernel:
      case Category::kRuntime:
        e.arg0 = t.correlation[i] >= 0 ? Saturate(t.correlation[i]) : 0;
        break;
      case Category::kOperator:
        e.arg1 = t.shapes[i];
        break;
      default:
        break;
    }
    raw.events.push_back(e);
  }
  for (const CounterSample& s : t.counters) {
    const uint16_t tr = s.track < track_id.size() ? track_id[s.track] : 0;
    if (tr == 0) {
      ++skipped;
      continue;
    }
    format::Event e{};
    e.ts_ns = s.ts_ns;
    e.track = tr;
    e.kind = format::EventKind::kCounter;
    e.category = Category::kUser;
    raw.strings.push_back(t.tracks[s.track].name);  // the series name
    e.name = static_cast<uint32_t>(raw.strings.size() - 1);
    e.set_counter_value(s.value);
    raw.events.push_back(e);
  }
  format::SortEventsByTime(&raw.events);
  m.event_count = static_cast<int64_t>(raw.events.size());
  // The reader's diagnostics travel with the capture, so that export reports them too.
  cap.diagnostics.Merge(t.diagnostics);
  cap.diagnostics.Add("export_tracks_dropped", dropped_tracks);
  cap.diagnostics.Add("export_skipped_events", skipped);
  format::SanitizeCaptureTimes(&cap);  // the trace's times are valid: this only marks them checked
  return cap;
}

}  // namespace rlprof::analysis
