#include "src/format/event_schema.h"

#include <iterator>

namespace rlprof::format {

const char* CategoryName(Category c) {
  static constexpr const char* kNames[] = {
      "user",   "step",   "stage",  "sub_step", "operator", "communication", "kernel",
      "memcpy", "memset", "sync",   "memory",   "runtime",  "capture"};
  // Framework contents (20..27).
  static constexpr const char* kContentNames[] = {"module", "allocation", "stack", "sample"};
  auto i = static_cast<uint8_t>(c);
  if (i < std::size(kNames)) return kNames[i];
  if (i >= 20 && i - 20u < std::size(kContentNames)) return kContentNames[i - 20];
  return "unknown";
}

const char* EventKindName(EventKind k) {
  static constexpr const char* kNames[kEventKindCount] = {"invalid", "complete", "begin",
                                                          "end",     "instant",  "counter"};
  auto i = static_cast<uint8_t>(k);
  return i < kEventKindCount ? kNames[i] : "unknown";
}

const char* TrackKindName(TrackKind k) {
  static constexpr const char* kNames[kTrackKindCount] = {"thread", "device_stream", "counter",
                                                          "async"};
  auto i = static_cast<uint8_t>(k);
  return i < kTrackKindCount ? kNames[i] : "unknown";
}

ArgSpec ArgSpecFor(Category c) {
  switch (c) {
    case Category::kStep: return {"step", nullptr, false};
    case Category::kStage: return {nullptr, "role", true};
    case Category::kSubStep: return {"index", nullptr, false};
    case Category::kOperator: return {"seq", "shapes", true};
    case Category::kCommunication: return {"bytes", "group", true};
    case Category::kKernel: return {"correlation", "launch", true};
    case Category::kRuntime: return {"correlation", "external_id", false};
    case Category::kMemcpy: return {"bytes", "direction", true};
    case Category::kModule: return {"depth", "class", true};
    case Category::kAllocation: return {"oom", "operator", true};
    case Category::kSample: return {"id", "detail", true, true};
    default: return {};
  }
}

}  // namespace rlprof::format
