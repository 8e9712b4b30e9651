#include "src/format/perfetto_packets.h"

namespace rlprof::format {
namespace {

// TracePacket
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kClockSnapshot = 6;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint32_t kFirstPacketOnSequence = 87;
// TrackDescriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParent = 5,
                   kTdCounter = 8;
// TrackEvent
constexpr uint32_t kTeCategoryIids = 3, kTeDebugAnnotations = 4, kTeType = 9, kTeNameIid = 10,
                   kTeTrackUuid = 11, kTeName = 23, kTeCounterValue = 30,
                   kTeDoubleCounterValue = 44, kTeFlowIds = 47, kTeTerminatingFlowIds = 48;
// InternedData
constexpr uint32_t kIdCategories = 1, kIdNames = 2, kIdArgNames = 3;
// DebugAnnotation
constexpr uint32_t kDaNameIid = 1, kDaUint = 3, kDaString = 6;

}  // namespace

void PerfettoPacketWriter::BeginPacket() {
  w_.Clear();
  packet_ = w_.BeginNested(1);  // Trace.packet
}

void PerfettoPacketWriter::EndPacket(uint32_t flags, bool first_on_sequence) {
  w_.Varint(kSequenceId, sequence_id_);
  if (flags != 0) w_.Varint(kSequenceFlags, flags);
  if (first_on_sequence) w_.Bool(kFirstPacketOnSequence, true);
  w_.EndNested(packet_);
  out_->append(w_.data());
}

void PerfettoPacketWriter::ProcessTrack(uint64_t uuid, int32_t pid, std::string_view name) {
  BeginPacket();
  size_t td = w_.BeginNested(kTrackDescriptor);
  w_.Varint(kTdUuid, uuid);
  size_t p = w_.BeginNested(kTdProcess);
  w_.Int(1, pid);
  w_.Bytes(6, name);  // process_name
  w_.EndNested(p);
  w_.EndNested(td);
  EndPacket(0);
}

void PerfettoPacketWriter::ThreadTrack(uint64_t uuid, uint64_t parent_uuid, int32_t pid,
                                       int32_t tid, std::string_view name) {
  BeginPacket();
  size_t td = w_.BeginNested(kTrackDescriptor);
  w_.Varint(kTdUuid, uuid);
  w_.Varint(kTdParent, parent_uuid);
  size_t t = w_.BeginNested(kTdThread);
  w_.Int(1, pid);
  w_.Int(2, tid);
  w_.Bytes(5, name);  // thread_name
  w_.EndNested(t);
  w_.EndNested(td);
  EndPacket(0);
}

void PerfettoPacketWriter::NamedTrack(uint64_t uuid, uint64_t parent_uuid, std::string_view name,
                                      bool counter) {
  BeginPacket();
  size_t td = w_.BeginNested(kTrackDescriptor);
  w_.Varint(kTdUuid, uuid);
  w_.Varint(kTdParent, parent_uuid);
  w_.Bytes(kTdName, name);
  if (counter) w_.EndNested(w_.BeginNested(kTdCounter));  // empty CounterDescriptor
  w_.EndNested(td);
  EndPacket(0);
}

void PerfettoPacketWriter::Interned(uint32_t field, std::span<const InternedString> entries) {
  for (const auto& e : entries) {
    size_t m = w_.BeginNested(field);
    w_.Varint(1, e.iid);
    w_.Bytes(2, e.name);
    w_.EndNested(m);
  }
}

void PerfettoPacketWriter::SequenceStart(std::span<const InternedString> categories,
                                         std::span<const InternedString> arg_names) {
  BeginPacket();
  size_t id = w_.BeginNested(kInternedData);
  Interned(kIdCategories, categories);
  Interned(kIdArgNames, arg_names);
  w_.EndNested(id);
  EndPacket(kSeqIncrementalStateCleared, /*first_on_sequence=*/true);
}

void PerfettoPacketWriter::ClockSnapshot(uint64_t boottime_ns, uint64_t realtime_ns) {
  BeginPacket();
  size_t cs = w_.BeginNested(kClockSnapshot);
  for (auto [id, ts] : {std::pair<uint32_t, uint64_t>{6, boottime_ns}, {1, realtime_ns}}) {
    size_t c = w_.BeginNested(1);  // clocks
    w_.Varint(1, id);
    w_.Varint(2, ts);
    w_.EndNested(c);
  }
  w_.EndNested(cs);
  EndPacket(0);
}

void PerfettoPacketWriter::Event(const TrackEventPacket& e) {
  BeginPacket();
  w_.Varint(kTimestamp, e.ts);
  if (!e.new_categories.empty() || !e.new_names.empty() || !e.new_arg_names.empty()) {
    size_t id = w_.BeginNested(kInternedData);
    Interned(kIdCategories, e.new_categories);
    Interned(kIdNames, e.new_names);
    Interned(kIdArgNames, e.new_arg_names);
    w_.EndNested(id);
  }
  size_t te = w_.BeginNested(kTrackEvent);
  w_.Varint(kTeType, static_cast<uint32_t>(e.type));
  w_.Varint(kTeTrackUuid, e.track_uuid);
  if (e.type != TrackEventType::kSliceEnd && e.type != TrackEventType::kCounter) {
    if (e.name_iid != 0) w_.Varint(kTeNameIid, e.name_iid);
    else w_.Bytes(kTeName, e.name);
  }
  if (e.category_iid != 0) w_.Varint(kTeCategoryIids, e.category_iid);
  for (const DebugArg& a : e.args) {
    size_t da = w_.BeginNested(kTeDebugAnnotations);
    w_.Varint(kDaNameIid, a.name_iid);
    if (a.is_string) w_.Bytes(kDaString, a.string_value);
    else w_.Varint(kDaUint, a.uint_value);
    w_.EndNested(da);
  }
  if (e.flow_id != 0) w_.Fixed64(e.flow_terminating ? kTeTerminatingFlowIds : kTeFlowIds, e.flow_id);
  if (e.type == TrackEventType::kCounter) {
    if (e.counter_is_double) w_.Double(kTeDoubleCounterValue, e.counter_double);
    else w_.Int(kTeCounterValue, e.counter_int);
  }
  w_.EndNested(te);
  EndPacket(e.sequence_flags);
}

}  // namespace rlprof::format
