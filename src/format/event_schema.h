// Names and argument meanings of the event record's enums, shared by every exporter so that
// Chrome JSON, Perfetto and SQLite agree (docs/formats.md lists them).
//
//   const char* cat = CategoryName(e.category);           // "operator"
//   ArgSpec a = ArgSpecFor(e.category);                    // {"seq", "shapes", arg1 is string}
//
// Thread-safety: pure functions over constant tables.
#ifndef RLPROF_SRC_FORMAT_EVENT_SCHEMA_H_
#define RLPROF_SRC_FORMAT_EVENT_SCHEMA_H_

#include <cstdint>

#include "rlprof/format/event.h"

namespace rlprof::format {

// One past the highest Category value (event.h); values without a name are "unknown".
inline constexpr int kCategoryCount = 28;
inline constexpr int kEventKindCount = 6;
inline constexpr int kTrackKindCount = 4;

// "user", "step", "stage", …; "unknown" outside the enum.
const char* CategoryName(Category c);
// "invalid", "complete", "begin", "end", "instant", "counter".
const char* EventKindName(EventKind k);
// "thread", "device_stream", "counter", "async".
const char* TrackKindName(TrackKind k);

// What arg0 / arg1 of an event of a category mean. A null name means "no defined meaning":
// exporters then show the raw value as "arg0"/"arg1" when it is non-zero.
struct ArgSpec {
  const char* arg0 = nullptr;
  const char* arg1 = nullptr;
  bool arg1_is_string = false;  // arg1 is a string id into the capture's string table
  bool arg0_is_string = false;  // arg0 is a string id too
};
ArgSpec ArgSpecFor(Category c);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_EVENT_SCHEMA_H_
