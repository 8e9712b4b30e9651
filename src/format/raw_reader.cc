// ReadRaw: recovers every complete, valid chunk of an events.rlp file. Damage never stops the
// reader: a bad chunk is skipped (the reader resynchronises on the next chunk magic), a torn
// last chunk is counted as a truncated tail, and every loss is counted in RawDiagnostics.
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <bitset>
#include <memory>
#include <unordered_map>

#include <sys/stat.h>

#include "src/base/files.h"
#include "src/format/event_schema.h"
#include "src/format/raw.h"
#include "src/format/raw_columnar.h"
#include "src/format/raw_layout.h"

namespace rlprof::format {
namespace {

using base::StatusOr;

constexpr size_t kMaxHeaderBytes = 64 * 1024;

struct ChunkView {
  uint32_t type = 0;
  uint32_t raw_len = 0;
  std::string_view payload;
};

enum class Frame { kOk, kBadChecksum, kBadHeader, kTruncated };

// Checks the chunk starting at `pos` (whose magic the caller has seen).
Frame CheckChunk(std::string_view b, size_t pos, ChunkView* out) {
  if (b.size() - pos < kRawChunkHeaderBytes) return Frame::kTruncated;
  const char* h = b.data() + pos;
  uint32_t type = GetLe<uint32_t>(h + 4);
  uint32_t raw_len = GetLe<uint32_t>(h + 8);
  uint32_t len = GetLe<uint32_t>(h + 12);
  uint32_t crc = GetLe<uint32_t>(h + 16);
  if (raw_len > kRawMaxChunkBytes || len > ZSTD_compressBound(kRawMaxChunkBytes)) {
    return Frame::kBadHeader;
  }
  if (b.size() - pos - kRawChunkHeaderBytes < len) return Frame::kTruncated;
  const char* payload = h + kRawChunkHeaderBytes;
  uint32_t c = RawCrc32(RawCrc32(0, h + 4, 12), payload, len);
  if (c != crc) return Frame::kBadChecksum;
  *out = {type, raw_len, std::string_view(payload, len)};
  return Frame::kOk;
}

size_t FindMagic(std::string_view b, size_t from) {
  char m[4];
  std::memcpy(m, &kRawChunkMagic, 4);
  size_t p = b.find(std::string_view(m, 4), from);
  return p == std::string_view::npos ? b.size() : p;
}

// Is there a valid chunk anywhere at or after `from`? Tells corruption from truncation.
size_t FindValidChunk(std::string_view b, size_t from) {
  for (size_t p = FindMagic(b, from); p < b.size(); p = FindMagic(b, p + 1)) {
    ChunkView v;
    if (CheckChunk(b, p, &v) == Frame::kOk) return p;
  }
  return b.size();
}

class Parser {
 public:
  explicit Parser(RawCapture* cap) : cap_(cap) {}

  void Chunk(const ChunkView& c, ZSTD_DCtx* dctx) {
    auto& d = cap_->diagnostics;
    if (c.type < 1 || c.type > 4) {
      ++d.unknown_chunk_types;
      return;
    }
    raw_.resize(c.raw_len);
    size_t n = ZSTD_decompressDCtx(dctx, raw_.data(), raw_.size(), c.payload.data(),
                                   c.payload.size());
    if (ZSTD_isError(n) || n != c.raw_len) {
      ++d.bad_payload_chunks;
      return;
    }
    std::string_view r(raw_.data(), raw_.size());
    if (static_cast<RawChunkType>(c.type) == RawChunkType::kEventsColumnar) {
      // Lengths, counts and varints are checked against the payload: a chunk that does not add
      // up loses its own events only.
      const size_t first = cap_->events.size();
      if (!decoder_.Decode(r, &cap_->events)) {
        ++d.bad_payload_chunks;
        return;
      }
      ++d.complete_chunks;
      DropUnknownKinds(first);
      return;
    }
    ++d.complete_chunks;
    switch (static_cast<RawChunkType>(c.type)) {
      case RawChunkType::kStrings: Strings(r); break;
      case RawChunkType::kTracks: Tracks(r); break;
      case RawChunkType::kEvents: Events(r); break;
      case RawChunkType::kEventsColumnar: break;  // above
    }
  }

  void Finish() {
    auto& d = cap_->diagnostics;
    // Sparse hostile ids must not make us allocate gigabytes: ids past `limit` are dropped.
    size_t limit = 4 * strings_.size() + (size_t{1} << 20);
    size_t size = 1;
    for (auto& [id, _] : strings_) {
      if (id < limit) size = std::max(size, size_t{id} + 1);
    }
    std::vector<uint8_t> defined(size, 0);
    cap_->strings.assign(defined.size(), std::string());
    for (auto& [id, value] : strings_) {
      if (id >= defined.size()) {
        ++d.bad_records;
        continue;
      }
      cap_->strings[id] = std::move(value);
      defined[id] = 1;
    }
    if (!defined.empty()) defined[0] = 1;
    auto is_defined = [&](uint32_t id) { return id == 0 || (id < defined.size() && defined[id]); };
    for (const Event& e : cap_->events) {
      if (!is_defined(e.name)) ++d.undefined_string_refs;
      if (ArgSpecFor(e.category).arg1_is_string && !is_defined(e.arg1)) ++d.undefined_string_refs;
      if (ArgSpecFor(e.category).arg0_is_string && !is_defined(e.arg0)) ++d.undefined_string_refs;
      if (!tracks_.test(e.track)) ++d.undefined_track_refs;
    }
  }

 private:
  void Strings(std::string_view r) {
    size_t p = 0;
    while (p < r.size()) {
      if (r.size() - p < 8) return Bad();
      uint32_t id = GetLe<uint32_t>(r.data() + p);
      uint32_t len = GetLe<uint32_t>(r.data() + p + 4);
      p += 8;
      if (r.size() - p < len) return Bad();
      strings_[id] = Keep(r.substr(p, len));
      p += len;
    }
  }

  void Tracks(std::string_view r) {
    size_t p = 0;
    while (p < r.size()) {
      if (r.size() - p < kRawTrackRecordFixedBytes) return Bad();
      const char* h = r.data() + p;
      TrackEntry t;
      t.id = GetLe<uint16_t>(h);
      t.kind = static_cast<TrackKind>(static_cast<uint8_t>(h[2]));
      t.pid = GetLe<uint32_t>(h + 4);
      t.os_id = GetLe<uint64_t>(h + 8);
      uint32_t len = GetLe<uint32_t>(h + 16);
      p += kRawTrackRecordFixedBytes;
      if (r.size() - p < len) return Bad();
      t.name = Keep(r.substr(p, len));
      p += len;
      if (static_cast<uint8_t>(t.kind) > static_cast<uint8_t>(TrackKind::kAsync)) {
        ++cap_->diagnostics.bad_records;
        continue;
      }
      tracks_.set(t.id);
      cap_->tracks.push_back(std::move(t));
    }
  }

  // At most kRawMaxStringBytes of a string, counted when cut.
  std::string Keep(std::string_view s) {
    if (s.size() <= kRawMaxStringBytes) return std::string(s);
    ++cap_->diagnostics.truncated_strings;
    return std::string(s.substr(0, kRawMaxStringBytes));
  }

  void Events(std::string_view r) {
    size_t n = r.size() / sizeof(Event);
    if (r.size() % sizeof(Event) != 0) ++cap_->diagnostics.bad_records;
    if (n == 0) return;  // an empty chunk: nothing to copy (memcpy to a null vector is UB)
    auto& ev = cap_->events;
    size_t first = ev.size();
    ev.resize(first + n);
    std::memcpy(ev.data() + first, r.data(), n * sizeof(Event));
    DropUnknownKinds(first);
  }

  // Drops the events from `first` on whose kind is unknown, in place (rare: damage inside a
  // valid chunk, or a writer bug).
  void DropUnknownKinds(size_t first) {
    auto& ev = cap_->events;
    auto valid = [](const Event& e) {
      auto k = static_cast<uint8_t>(e.kind);
      return k != 0 && k <= static_cast<uint8_t>(EventKind::kCounter);
    };
    auto end = std::stable_partition(ev.begin() + static_cast<ptrdiff_t>(first), ev.end(), valid);
    cap_->diagnostics.bad_records += static_cast<uint64_t>(ev.end() - end);
    ev.erase(end, ev.end());
  }

  void Bad() { ++cap_->diagnostics.bad_records; }

  RawCapture* cap_;
  std::string raw_;
  ColumnarDecoder decoder_;
  std::unordered_map<uint32_t, std::string> strings_;
  std::bitset<65536> tracks_;
};

// Parses the file header; returns where the chunks start, or npos if `b` is not an rlprof file.
StatusOr<size_t> ParseHeader(std::string_view b, const std::string& name, RawCapture* cap) {
  size_t m = std::min(b.size(), sizeof kRawMagic);
  if (std::memcmp(b.data(), kRawMagic, m) != 0) {
    return base::InvalidArgument(name + ": not an rlprof events file (bad magic)");
  }
  if (b.size() < kRawHeaderFixedBytes) {  // killed before the header was complete
    cap->diagnostics.truncated_tail_bytes = b.size();
    return b.size();
  }
  const uint32_t version = GetLe<uint32_t>(b.data() + 8);
  uint32_t hb = GetLe<uint32_t>(b.data() + 12);
  uint32_t host_len = GetLe<uint32_t>(b.data() + 28);
  bool sane = hb >= kRawHeaderFixedBytes && hb <= kMaxHeaderBytes &&
              host_len <= hb - kRawHeaderFixedBytes;
  if (sane && b.size() < hb) {
    cap->diagnostics.truncated_tail_bytes = b.size();
    return b.size();
  }
  // The checksum first: a flipped version byte is damage to the header (lose the header, keep
  // the chunks), not a file from the future.
  if (!sane || RawCrc32(0, b.data(), hb - 4) != GetLe<uint32_t>(b.data() + hb - 4)) {
    // Damaged header: keep the body, resynchronise on the first chunk magic.
    size_t p = FindMagic(b, sizeof kRawMagic);
    cap->diagnostics.skipped_bytes += p - sizeof kRawMagic;
    return p;
  }
  if (version > kRawFormatVersion) {
    return base::FailedPrecondition(name + ": events format version " + std::to_string(version) +
                                    " is newer than this rlprof reads (" +
                                    std::to_string(kRawFormatVersion) + ")");
  }
  cap->version = version;
  cap->info.rank = static_cast<int64_t>(GetLe<uint64_t>(b.data() + 16));
  cap->info.pid = GetLe<uint32_t>(b.data() + 24);
  cap->info.host.assign(b.data() + 32, host_len);
  cap->diagnostics.header_ok = true;
  return size_t{hb};
}

}  // namespace

const std::string& RawCapture::str(uint32_t id) const {
  static const std::string kEmpty;
  return id < strings.size() ? strings[id] : kEmpty;
}

StatusOr<RawCapture> ReadRawBytes(std::string_view b, const std::string& name) {
  RawCapture cap;
  cap.diagnostics.file_bytes = b.size();
  RLPROF_ASSIGN_OR_RETURN(size_t pos, ParseHeader(b, name, &cap));
  auto& d = cap.diagnostics;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  Parser parser(&cap);
  while (pos < b.size()) {
    size_t rest = b.size() - pos;
    bool magic_ok = rest >= 4 && GetLe<uint32_t>(b.data() + pos) == kRawChunkMagic;
    if (!magic_ok && rest < 4) {
      char m[4];
      std::memcpy(m, &kRawChunkMagic, 4);
      if (std::memcmp(b.data() + pos, m, rest) == 0) {
        d.truncated_tail_bytes += rest;
        break;
      }
    }
    ChunkView v;
    Frame f = magic_ok ? CheckChunk(b, pos, &v) : Frame::kBadHeader;
    if (f == Frame::kOk) {
      parser.Chunk(v, dctx.get());
      pos += kRawChunkHeaderBytes + v.payload.size();
      continue;
    }
    // Damage or truncation. A valid chunk further on means this one was damaged.
    size_t next = FindValidChunk(b, pos + 1);
    if (f == Frame::kTruncated && next == b.size()) {
      d.truncated_tail_bytes += rest;
      break;
    }
    ++d.bad_checksum_chunks;
    if (f == Frame::kBadChecksum) {
      size_t end = pos + kRawChunkHeaderBytes + GetLe<uint32_t>(b.data() + pos + 12);
      if (end < next) d.skipped_bytes += next - end;  // damage spanned a length field
    } else {
      d.skipped_bytes += next - pos;
    }
    pos = next;
  }
  parser.Finish();
  return cap;
}

StatusOr<RawCapture> ReadRaw(const std::string& path) {
  // Only a regular file: a FIFO would block the open, /dev/zero would be read forever.
  RLPROF_RETURN_IF_ERROR(base::CheckRegularFile(path));
  // One read of the whole file (faster than stream copies for captures of hundreds of MB).
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (f == nullptr) {
    if (errno == ENOENT) return base::NotFound(path + ": no such file");
    return base::IoError(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fileno(f.get()), &st) != 0) return base::IoError(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return base::InvalidArgument(path + ": not a regular file: not read");
  // The header first: a file that is no capture (a sparse or foreign file under this name) is
  // not read whole just to be rejected.
  std::string bytes(sizeof(kRawMagic), '\0');
  const size_t head = std::fread(bytes.data(), 1, bytes.size(), f.get());
  bytes.resize(head);
  if (head < sizeof(kRawMagic) || std::memcmp(bytes.data(), kRawMagic, sizeof(kRawMagic)) != 0)
    return ReadRawBytes(bytes, path);
  try {
    if (st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) bytes.append(buf, n);
  } catch (const std::bad_alloc&) {
    return base::FailedPrecondition(path + ": " + std::to_string(st.st_size) +
                                    " bytes: not enough memory to read it");
  }
  if (std::ferror(f.get())) return base::IoError(path + ": read error");
  return ReadRawBytes(bytes, path);
}

bool RawDiagnostics::clean() const {
  return header_ok && bad_checksum_chunks == 0 && truncated_tail_bytes == 0 &&
         unknown_chunk_types == 0 && undefined_string_refs == 0 && undefined_track_refs == 0 &&
         bad_payload_chunks == 0 && bad_records == 0 && skipped_bytes == 0 &&
         truncated_strings == 0;
}

std::string RawDiagnostics::ToString() const {
  std::string s;
  auto add = [&](uint64_t n, const char* what) {
    if (n == 0) return;
    if (!s.empty()) s += "; ";
    s += std::to_string(n) + " " + what;
  };
  if (!header_ok) s = file_bytes == 0 ? "empty file" : "file header missing or damaged";
  add(bad_checksum_chunks, "damaged chunks skipped");
  add(bad_payload_chunks, "undecodable chunks skipped");
  add(unknown_chunk_types, "chunks of unknown type skipped");
  add(truncated_tail_bytes, "truncated tail bytes (writer stopped mid-chunk)");
  add(skipped_bytes, "bytes skipped while resynchronising");
  add(bad_records, "malformed records dropped");
  add(undefined_string_refs, "references to undefined strings");
  add(undefined_track_refs, "references to undefined tracks");
  add(truncated_strings, "names longer than 1 MiB truncated");
  return s;
}

}  // namespace rlprof::format
