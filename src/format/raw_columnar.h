// The columnar encoding of an events chunk (RawChunkType::kEventsColumnar, docs/formats.md
// §2.2): a chunk's events stored column by column, each field coded against what precedes it
// in the same chunk, before zstd. On operator captures this takes ≈ 2–4 bytes per event on
// disk where the 32-byte records took ≈ 5–8 (docs/performance.md "Formats").
//
//   ColumnarEncoder enc;                      // one per writer: keeps its scratch buffers
//   const std::string& raw = enc.Encode(events);
//   ColumnarDecoder dec;                      // one per reader
//   bool ok = dec.Decode(raw, &out_events);   // appends; false (nothing appended) if corrupt
//
// Every chunk is decoded on its own (no state crosses chunks), so a damaged chunk loses only
// its own events. Any Event round-trips bit for bit, whatever its values (kinds and
// categories unknown to this version included).
//
// Thread-safety: an encoder or decoder is used by one thread at a time.
#ifndef RLPROF_SRC_FORMAT_RAW_COLUMNAR_H_
#define RLPROF_SRC_FORMAT_RAW_COLUMNAR_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/format/event.h"
#include "src/format/raw.h"

namespace rlprof::format {

// The columns, in the order they follow each other in the payload.
enum class EventColumn : uint8_t {
  kKind = 0, kCategory, kTrack, kPop, kTime, kPayload, kName, kArg0, kArg1,
};
inline constexpr size_t kEventColumns = 9;
// A track keeps at most this many finished ranges for prediction; a full stack drops its older
// half (the writer and every reader drop the same frames).
inline constexpr size_t kColumnarStackDepth = 256;
// More events than a chunk of 32-byte records could hold is corrupt: a columnar chunk never
// makes the reader allocate more than a records chunk of the same size limit.
inline constexpr uint64_t kColumnarMaxEvents = kRawMaxChunkBytes / sizeof(Event);

// The per-chunk prediction state both sides keep in step: per track, a stack of the ranges
// that ended last (begin, end) and the last counter value; the last async range id; per
// category and argument, the last argument value. Reset at the start of each chunk.
class ColumnarModel {
 public:
  struct Frame {
    int64_t begin;
    int64_t end;
  };
  struct TrackState {
    std::vector<Frame> frames;
    uint64_t last_counter = 0;
  };

  ColumnarModel();
  void Reset();
  TrackState& Track(uint16_t track);
  // Pushes a finished range onto `s`, dropping the older half of a full stack first.
  static void Push(TrackState& s, Frame f);

  int64_t prev_ts = 0;
  int64_t last_range_id = 0;
  std::array<std::array<uint32_t, 256>, 2> last_arg{};  // [arg][category], value + 1

 private:
  std::vector<int32_t> slot_;   // track → index into pool_, −1 none this chunk
  std::vector<uint16_t> used_;  // tracks with a slot this chunk
  std::vector<TrackState> pool_;
};

class ColumnarEncoder {
 public:
  // The payload (before zstd) for `events`; valid until the next call.
  const std::string& Encode(std::span<const Event> events);
  // Where each column of the last payload ends (the first also holds the count and lengths):
  // the writer ends a zstd block at each, so that every column gets its own entropy tables.
  std::span<const size_t> column_ends() const { return ends_; }

 private:
  ColumnarModel model_;
  std::array<std::vector<uint8_t>, kEventColumns> cols_;
  std::string out_;
  std::array<size_t, kEventColumns> ends_{};
};

class ColumnarDecoder {
 public:
  // Appends the events of `payload` to `out`. False on any inconsistency (a length, count or
  // varint running past its column, a value out of its field's range, a column left with
  // bytes over); `out` is then as it was.
  bool Decode(std::string_view payload, std::vector<Event>* out);

 private:
  ColumnarModel model_;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_RAW_COLUMNAR_H_
