// rlprof's raw capture format, events.rlp: append-only, chunked, each chunk zstd-compressed
// and checksummed, behind a self-describing versioned header. A process killed at any
// moment leaves a file whose complete chunks are all readable (see docs/formats.md).
//
// Writer (used by the runtime's background writer thread — never the training thread):
//   auto w = RawWriter::Create(dir + "/events.rlp", {.rank = 0, .pid = getpid()});
//   w->AddStrings({{1, "actor_update"}});        // define ids before events use them
//   w->AddTracks({{1, TrackKind::kThread, tid, pid, "main"}});
//   w->AddEvents(events);                         // buffered; emits a chunk when large enough
//   w->Flush();                                   // emit what is buffered now (crash safety)
//   w->Close();
// Reader:
//   auto cap = ReadRaw(path);   // ok even for a truncated file: cap->diagnostics says what was lost
//
// Thread-safety: a RawWriter is used by one thread at a time; ReadRaw is reentrant.
#ifndef RLPROF_SRC_FORMAT_RAW_H_
#define RLPROF_SRC_FORMAT_RAW_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/format/event.h"
#include "src/base/status.h"

namespace rlprof::format {

struct StringEntry {
  uint32_t id = 0;
  std::string value;  // arbitrary bytes; not necessarily valid UTF-8
};

struct TrackEntry {
  uint16_t id = 0;
  TrackKind kind = TrackKind::kThread;
  uint64_t os_id = 0;  // tid, or (device << 32 | stream)
  uint32_t pid = 0;
  std::string name;
};

struct RawHeaderInfo {
  int64_t rank = -1;
  uint32_t pid = 0;
  std::string host;
};

// How a writer stores events chunks: kColumnar (what version 2 writes: ≈ 2–4 bytes an
// operator event on disk) or kRecords (the 32-byte records of version 1, for benchmarks and tests that
// compare the two). Either way the file is version 2; its readers read both chunk types.
enum class RawEventEncoding : uint8_t { kColumnar, kRecords };

// Strings and track names longer than 16 MiB are truncated; `chunk_bytes` (of 32-byte records:
// a chunk holds chunk_bytes / 32 events) is clamped to [32 B, 32 MiB]. After a write error
// every call returns that error (the file keeps its complete chunks).
class RawWriter {
 public:
  static base::StatusOr<std::unique_ptr<RawWriter>> Create(
      const std::string& path, const RawHeaderInfo& info, size_t chunk_bytes = 1 << 20,
      int zstd_level = 1, RawEventEncoding encoding = RawEventEncoding::kColumnar);
  virtual ~RawWriter() = default;
  virtual base::Status AddStrings(std::span<const StringEntry> strings) = 0;
  virtual base::Status AddTracks(std::span<const TrackEntry> tracks) = 0;
  virtual base::Status AddEvents(std::span<const Event> events) = 0;
  virtual base::Status Flush() = 0;
  virtual base::Status Close() = 0;
  // Bytes in the file so far (header + chunks); events already in chunks on disk (events
  // still buffered are not counted until a chunk holding them is written).
  virtual uint64_t bytes_written() const = 0;
  virtual uint64_t events_written() const = 0;
};

// What reading found wrong; every count is shown by the tools that read the file.
struct RawDiagnostics {
  uint64_t complete_chunks = 0;
  uint64_t bad_checksum_chunks = 0;   // skipped
  uint64_t truncated_tail_bytes = 0;  // an incomplete last chunk (killed writer)
  uint64_t unknown_chunk_types = 0;   // skipped (written by a newer version)
  uint64_t undefined_string_refs = 0;
  uint64_t undefined_track_refs = 0;
  bool header_ok = false;
  // Extensions beyond the first contract (all zero on a healthy file):
  uint64_t bad_payload_chunks = 0;    // checksum ok but zstd payload or lengths inconsistent
  uint64_t bad_records = 0;           // malformed string/track records inside a valid chunk
  uint64_t skipped_bytes = 0;         // bytes passed over while resynchronising after damage
  uint64_t truncated_strings = 0;     // strings / track names cut to kRawMaxStringBytes
  uint64_t file_bytes = 0;            // size of the input (0: an empty file)

  // True when nothing was lost or unresolved.
  bool clean() const;
  // One line, e.g. "2 chunks with bad checksum skipped; 131 truncated tail bytes"; "" if clean.
  std::string ToString() const;
};

// On-disk constants (docs/formats.md describes the layout).
inline constexpr char kRawMagic[8] = {'R', 'L', 'P', 'R', 'O', 'F', '\0', '\1'};
// Version 2: events are written as columnar chunks (type 4), which a version-1 reader would skip
// as unknown — every event lost without an error — so it is told to refuse the file instead.
// This reader reads versions 1 and 2 (and either events chunk type in either).
inline constexpr uint32_t kRawFormatVersion = 2;
inline constexpr uint32_t kRawChunkMagic = 0x4B434C52;  // "RLCK" little-endian
inline constexpr size_t kRawChunkHeaderBytes = 20;
inline constexpr uint32_t kRawMaxChunkBytes = 64u << 20;  // uncompressed; larger is corrupt
// Readers keep at most this many bytes of a string or track name (the rest is counted lost):
// a hostile 1 GB name must not multiply memory through every copy of the analysis.
inline constexpr size_t kRawMaxStringBytes = 1u << 20;
// kEvents: 32-byte Event records; kEventsColumnar: the same events column by column, coded
// against each other (raw_columnar.h), what the writer emits since version 2.
enum class RawChunkType : uint32_t { kStrings = 1, kTracks = 2, kEvents = 3, kEventsColumnar = 4 };

struct RawCapture {
  uint32_t version = 0;
  RawHeaderInfo info;
  std::vector<std::string> strings;  // index = string id; [0] = ""
  std::vector<TrackEntry> tracks;    // in file order
  std::vector<Event> events;         // in file order (sort before use)
  RawDiagnostics diagnostics;
  const std::string& str(uint32_t id) const;
};

// Reads every complete chunk. Fails only when the file cannot be opened (or is not a regular
// file), does not start with the rlprof magic, or has an intact header of a newer version; a
// damaged header or body (a flipped version byte included: the header checksum tells) yields
// a partial capture plus diagnostics.
base::StatusOr<RawCapture> ReadRaw(const std::string& path);
// Same, from bytes already in memory (`name` is used in error messages).
base::StatusOr<RawCapture> ReadRawBytes(std::string_view bytes, const std::string& name);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_RAW_H_
