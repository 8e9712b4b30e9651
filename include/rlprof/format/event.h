// The event record: the one contract shared by the capture runtime (which writes it) and
// the format readers / analysis (which read it). Fixed size, trivially copyable, 32 bytes.
//
//   Event e{};
//   e.ts_ns = now; e.payload = dur; e.name = name_id; e.track = thread_track;
//   e.kind = EventKind::kComplete; e.category = Category::kStage;
//
// Strings (`name`, string-valued `arg0`/`arg1`) are ids into the capture's string table;
// id 0 is the empty string. `track` is an id into the capture's track table (threads,
// device streams, counter tracks). Time is int64 nanoseconds on the capture's clock
// (CLOCK_MONOTONIC domain; the manifest carries the realtime anchor and the offset to rank 0).
// Thread-safety: plain data.
#ifndef RLPROF_INCLUDE_RLPROF_FORMAT_EVENT_H_
#define RLPROF_INCLUDE_RLPROF_FORMAT_EVENT_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rlprof::format {

enum class EventKind : uint8_t {
  kInvalid = 0,
  kComplete = 1,  // a range on one thread: ts_ns = begin, payload = duration (ns)
  kBegin = 2,     // an async range begin (mstx semantics): payload = range id
  kEnd = 3,       // the matching end, possibly on another thread: payload = range id
  kInstant = 4,   // a mark
  kCounter = 5,   // a counter sample: payload = IEEE-754 double bit pattern
};

enum class Category : uint8_t {
  kUser = 0,           // user range / mark / counter
  kStep = 1,           // an RL step: arg0 = step number
  kStage = 2,          // an annotated stage call: name = stage, arg1 = role (string id)
  kSubStep = 3,        // decode iteration / micro-batch / mini-batch: name = kind, arg0 = index
  kOperator = 4,       // framework operator: arg0 = sequence number, arg1 = shapes (string id)
  kCommunication = 5,  // collective / p2p: arg0 = bytes (saturated), arg1 = group (string id)
  kKernel = 6,         // device kernel (track = device stream): arg0 = correlation id
  kMemcpy = 7,         // device copy: arg0 = bytes (saturated), arg1 = direction (string id)
  kMemset = 8,
  kSync = 9,           // synchronisation / wait (never counted as work)
  kMemory = 10,        // memory counters (allocated, reserved, RSS)
  kRuntime = 11,       // device runtime API call (cudaLaunchKernel, …): arg0 = correlation id
  kCapture = 12,       // rlprof's own bookkeeping (window open/close, drops)
  // 13..19: reserved (device sources). 20..27: framework contents (docs/config.md).
  kModule = 20,        // nn.Module forward (complete): name = qualified path (`Model.layers.3.attn`),
                       // arg0 = depth (0 = a root module), arg1 = module class (string id)
  kAllocation = 21,    // allocator event (instant): payload = bytes (< 0: a free), name = device
                       // ("cpu", "cuda:0"), arg1 = innermost operator on the thread (string id, 0 none)
  kStack = 22,         // Python call stack (instant) of the operator that begins at the same ts on
                       // the same track: name = frames "file:line:function", innermost first, '\n'-joined
  kSample = 23,        // a generated sample's life (src/runtime/sample_source.h): name = sample,
                       // sample/<phase> (complete) or sample/<fact> (instant), arg0 = its id (string id)
};

struct Event {
  int64_t ts_ns;
  int64_t payload;
  uint32_t name;
  uint16_t track;
  EventKind kind;
  Category category;
  uint32_t arg0;
  uint32_t arg1;

  double counter_value() const {
    double v;
    std::memcpy(&v, &payload, sizeof v);
    return v;
  }
  void set_counter_value(double v) { std::memcpy(&payload, &v, sizeof v); }
  int64_t end_ns() const { return kind == EventKind::kComplete ? ts_ns + payload : ts_ns; }
};

static_assert(sizeof(Event) == 32, "Event is part of the on-disk format");
static_assert(std::is_trivially_copyable_v<Event>);

// A track: what an event's `track` id refers to.
enum class TrackKind : uint8_t {
  kThread = 0,         // host thread: os_id = tid (>= kMarkerLaneTidBase: a marker lane, below)
  kDeviceStream = 1,   // os_id = (device << 32) | stream
  kCounter = 2,        // counter series (name = series name)
  kAsync = 3,          // async ranges that end on another thread
};

// A thread track whose os_id is at least this is a lane of one thread's markers in a named
// group — an NVTX domain on that thread: os_id = kMarkerLaneTidBase | domain << 22 | tid (Linux
// tids are below 2^22), name = the domain. Exports show it as its own row; analyses group its
// ranges under its name.
inline constexpr uint64_t kMarkerLaneTidBase = uint64_t{1} << 30;

}  // namespace rlprof::format

#endif  // RLPROF_INCLUDE_RLPROF_FORMAT_EVENT_H_
