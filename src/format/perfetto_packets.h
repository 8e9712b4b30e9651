// Builds the TracePackets of a Perfetto trace (field numbers: trace-formats.md §5.2), each
// framed as `Trace.packet` (0x0A, length) and appended to an output string. The exporter
// (perfetto_trace.h) drives it; tests check it byte-for-byte against the worked encodings
// of trace-formats.md §5.4.
//
//   PerfettoPacketWriter p(/*sequence_id=*/1, &out);
//   p.ProcessTrack(1, 1234, "rank0");
//   p.ThreadTrack(2, 1, 1234, 1234, "main");
//   p.Event({.ts = 1000, .type = TrackEventType::kSliceBegin, .track_uuid = 2, .name = "rl/step"});
//
// Thread-safety: one thread at a time.
#ifndef RLPROF_SRC_FORMAT_PERFETTO_PACKETS_H_
#define RLPROF_SRC_FORMAT_PERFETTO_PACKETS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "src/format/proto_writer.h"

namespace rlprof::format {

enum class TrackEventType : uint32_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };

// TracePacket.sequence_flags
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;

struct InternedString {
  uint64_t iid;
  std::string_view name;
};

struct DebugArg {
  uint64_t name_iid = 0;
  bool is_string = false;
  uint64_t uint_value = 0;
  std::string_view string_value;
};

struct TrackEventPacket {
  uint64_t ts = 0;
  TrackEventType type = TrackEventType::kInstant;
  uint64_t track_uuid = 0;
  std::string_view name;       // used when name_iid == 0 (and the type is not SLICE_END)
  uint64_t name_iid = 0;
  uint64_t category_iid = 0;   // 0: none
  std::span<const DebugArg> args;
  uint64_t flow_id = 0;          // 0: none; flow_ids (source) or terminating_flow_ids (sink)
  bool flow_terminating = false;
  bool counter_is_double = false;
  int64_t counter_int = 0;
  double counter_double = 0;
  // Interned entries first defined by this packet.
  std::span<const InternedString> new_categories;
  std::span<const InternedString> new_names;
  std::span<const InternedString> new_arg_names;
  uint32_t sequence_flags = 0;
};

class PerfettoPacketWriter {
 public:
  PerfettoPacketWriter(uint32_t sequence_id, std::string* out)
      : sequence_id_(sequence_id), out_(out) {}

  void ProcessTrack(uint64_t uuid, int32_t pid, std::string_view name);
  void ThreadTrack(uint64_t uuid, uint64_t parent_uuid, int32_t pid, int32_t tid,
                   std::string_view name);
  // A named child track of `parent_uuid`; a counter track when `counter`.
  void NamedTrack(uint64_t uuid, uint64_t parent_uuid, std::string_view name, bool counter);
  // First packet of the sequence: clears incremental state and defines interned entries.
  void SequenceStart(std::span<const InternedString> categories,
                     std::span<const InternedString> arg_names);
  // ClockSnapshot: BOOTTIME (the default trace clock, which rlprof's monotonic times are
  // written in) at `boottime_ns` is REALTIME `realtime_ns`.
  void ClockSnapshot(uint64_t boottime_ns, uint64_t realtime_ns);
  void Event(const TrackEventPacket& e);

  uint32_t sequence_id() const { return sequence_id_; }

 private:
  void BeginPacket();
  void EndPacket(uint32_t flags, bool first_on_sequence = false);
  void Interned(uint32_t field, std::span<const InternedString> entries);

  uint32_t sequence_id_;
  std::string* out_;
  ProtoWriter w_;
  size_t packet_ = 0;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_PERFETTO_PACKETS_H_
