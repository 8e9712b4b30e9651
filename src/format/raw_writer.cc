// RawWriter: buffers strings, tracks and events and appends them to events.rlp as whole,
// zstd-compressed, checksummed chunks (layout in docs/formats.md and raw_layout.h).
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "src/format/raw.h"
#include "src/format/raw_columnar.h"
#include "src/format/raw_layout.h"

namespace rlprof::format {
namespace {

using base::Status;
using base::StatusOr;

constexpr size_t kMaxHostBytes = 1024;
constexpr size_t kMaxStringBytes = 16u << 20;  // longer strings are truncated

// What a writer needs in memory besides its file: the zstd context (its workspace is
// allocated at the first compression) and the chunk buffers, about 2 MiB. Made afresh for
// every capture they cost more than a small capture's whole write (fresh pages from the
// kernel: mmap, page faults, munmap), so each thread keeps the last writer's and the next
// writer on that thread takes them over. A thread with several writers open at once gives
// the cache to the first; the others make their own.
struct Scratch {
  ZSTD_CCtx* cctx = nullptr;
  std::vector<Event> events;
  std::vector<char> out;
  std::unique_ptr<ColumnarEncoder> encoder;  // its column buffers: several MiB for a full chunk
  ~Scratch() { ZSTD_freeCCtx(cctx); }
};
thread_local Scratch t_scratch;
thread_local bool t_scratch_lent = false;

class RawWriterImpl final : public RawWriter {
 public:
  RawWriterImpl(std::string path, int fd, size_t chunk_bytes, int level, RawEventEncoding encoding)
      : path_(std::move(path)), fd_(fd), chunk_bytes_(chunk_bytes), level_(level), encoding_(encoding) {
    chunk_events_ = std::max<size_t>(1, chunk_bytes_ / sizeof(Event));
    if (!t_scratch_lent) {
      t_scratch_lent = borrowed_ = true;
      std::swap(cctx_, t_scratch.cctx);
      events_.swap(t_scratch.events);
      out_.swap(t_scratch.out);
      encoder_.swap(t_scratch.encoder);
      events_.clear();
    }
    events_.reserve(chunk_events_);
    if (cctx_ == nullptr) cctx_ = ZSTD_createCCtx();
    if (encoder_ == nullptr) encoder_ = std::make_unique<ColumnarEncoder>();
  }
  ~RawWriterImpl() override {
    if (fd_ >= 0) (void)Close();
    // Only a buffer of a sensible size goes back (one chunk), so that a writer made with a
    // huge chunk size does not keep its memory for the life of the thread.
    if (borrowed_ && events_.capacity() <= (1u << 20) / sizeof(Event) * 2) {
      std::swap(cctx_, t_scratch.cctx);
      events_.swap(t_scratch.events);
      out_.swap(t_scratch.out);
      encoder_.swap(t_scratch.encoder);
    }
    if (borrowed_) t_scratch_lent = false;
    ZSTD_freeCCtx(cctx_);  // ours, or the cache's previous one after a swap (null: no-op)
  }

  Status WriteHeader(const RawHeaderInfo& info) {
    std::string h = EncodeRawHeader(info, kMaxHostBytes);
    return WriteAll(h.data(), h.size());
  }

  Status AddStrings(std::span<const StringEntry> strings) override {
    RLPROF_RETURN_IF_ERROR(Usable());
    for (const auto& s : strings) {
      size_t len = std::min(s.value.size(), kMaxStringBytes);
      size_t rec = 8 + len;
      if (!strings_.empty() && strings_.size() + rec > chunk_bytes_) {
        RLPROF_RETURN_IF_ERROR(EmitBytes(RawChunkType::kStrings, &strings_));
      }
      PutU32(&strings_, s.id);
      PutU32(&strings_, static_cast<uint32_t>(len));
      strings_.append(s.value.data(), len);
    }
    return Status::Ok();
  }

  Status AddTracks(std::span<const TrackEntry> tracks) override {
    RLPROF_RETURN_IF_ERROR(Usable());
    for (const auto& t : tracks) {
      size_t len = std::min(t.name.size(), kMaxStringBytes);
      size_t rec = kRawTrackRecordFixedBytes + len;
      if (!tracks_.empty() && tracks_.size() + rec > chunk_bytes_) {
        RLPROF_RETURN_IF_ERROR(EmitBytes(RawChunkType::kTracks, &tracks_));
      }
      PutU16(&tracks_, t.id);
      tracks_.push_back(static_cast<char>(t.kind));
      tracks_.push_back(0);
      PutU32(&tracks_, t.pid);
      PutU64(&tracks_, t.os_id);
      PutU32(&tracks_, static_cast<uint32_t>(len));
      tracks_.append(t.name.data(), len);
    }
    return Status::Ok();
  }

  Status AddEvents(std::span<const Event> events) override {
    RLPROF_RETURN_IF_ERROR(Usable());
    while (!events.empty()) {
      if (events_.empty() && events.size() >= chunk_events_) {
        // Whole chunks straight from the caller's memory: no copy into the buffer.
        RLPROF_RETURN_IF_ERROR(EmitDefinitions());
        RLPROF_RETURN_IF_ERROR(EmitEvents(events.first(chunk_events_)));
        events = events.subspan(chunk_events_);
        continue;
      }
      size_t n = std::min(events.size(), chunk_events_ - events_.size());
      events_.insert(events_.end(), events.begin(), events.begin() + n);
      events = events.subspan(n);
      if (events_.size() == chunk_events_) {
        RLPROF_RETURN_IF_ERROR(EmitDefinitions());
        RLPROF_RETURN_IF_ERROR(EmitEvents(events_));
        events_.clear();
      }
    }
    return Status::Ok();
  }

  Status Flush() override {
    RLPROF_RETURN_IF_ERROR(Usable());
    RLPROF_RETURN_IF_ERROR(EmitDefinitions());
    if (!events_.empty()) {
      RLPROF_RETURN_IF_ERROR(EmitEvents(events_));
      events_.clear();
    }
    return WritePending();
  }

  Status Close() override {
    if (fd_ < 0) return failed_.ok() ? base::FailedPrecondition(path_ + ": already closed") : failed_;
    Status s = failed_.ok() ? Flush() : failed_;
    if (::close(fd_) != 0 && s.ok()) s = base::IoError(path_ + ": close: " + std::strerror(errno));
    fd_ = -1;
    return s;
  }

  uint64_t bytes_written() const override { return bytes_written_; }
  uint64_t events_written() const override { return events_written_; }

 private:
  Status Usable() const {
    if (!failed_.ok()) return failed_;
    if (fd_ < 0) return base::FailedPrecondition(path_ + ": writer is closed");
    return Status::Ok();
  }

  Status EmitDefinitions() {
    if (!strings_.empty()) RLPROF_RETURN_IF_ERROR(EmitBytes(RawChunkType::kStrings, &strings_));
    if (!tracks_.empty()) RLPROF_RETURN_IF_ERROR(EmitBytes(RawChunkType::kTracks, &tracks_));
    return Status::Ok();
  }

  Status EmitBytes(RawChunkType type, std::string* buf) {
    Status s = EmitChunk(type, buf->data(), buf->size());
    buf->clear();
    return s;
  }

  Status EmitEvents(std::span<const Event> ev) {
    const std::string* cols =
        encoding_ == RawEventEncoding::kColumnar ? &encoder_->Encode(ev) : nullptr;
    // A columnar chunk is never larger before compression than the records it holds: events
    // whose values defeat every predictor go out as records, so a chunk stays within what
    // callers budget for (32 bytes an event before zstd, as in version 1).
    if (cols != nullptr && cols->size() <= ev.size_bytes()) {
      RLPROF_RETURN_IF_ERROR(
          EmitBlocks(RawChunkType::kEventsColumnar, *cols, encoder_->column_ends(), ev.size()));
    } else {
      RLPROF_RETURN_IF_ERROR(EmitChunk(RawChunkType::kEvents, ev.data(), ev.size_bytes(), ev.size()));
    }
    return Status::Ok();
  }

  Status EmitChunk(RawChunkType type, const void* data, size_t size, uint64_t events = 0) {
    size_t bound = ZSTD_compressBound(size);
    out_.resize(kRawChunkHeaderBytes + bound);
    size_t c = ZSTD_compressCCtx(cctx_, out_.data() + kRawChunkHeaderBytes, bound, data, size,
                                 level_);
    if (ZSTD_isError(c)) {
      return Fail(base::Internal(path_ + ": zstd: " + ZSTD_getErrorName(c)));
    }
    EncodeRawChunkHeader(type, static_cast<uint32_t>(size), out_.data() + kRawChunkHeaderBytes,
                         static_cast<uint32_t>(c), out_.data());
    return WriteAll(out_.data(), kRawChunkHeaderBytes + c, events);
  }

  // One zstd frame, as EmitChunk, whose blocks end at `ends` (ascending, the last =
  // data.size()): each column of a columnar chunk is compressed with tables of its own, ≈ 7 %
  // smaller than one run of blocks across columns on operator captures.
  Status EmitBlocks(RawChunkType type, std::string_view data, std::span<const size_t> ends,
                    uint64_t events) {
    const auto zfail = [&](size_t r) {
      return Fail(base::Internal(path_ + ": zstd: " + ZSTD_getErrorName(r)));
    };
    ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
    size_t r = ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level_);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setPledgedSrcSize(cctx_, data.size());
    if (ZSTD_isError(r)) return zfail(r);
    // A flushed block is never larger than its input plus a 3-byte block header.
    out_.resize(kRawChunkHeaderBytes + ZSTD_compressBound(data.size()) + 3 * (ends.size() + 1) + 32);
    ZSTD_outBuffer out{out_.data() + kRawChunkHeaderBytes, out_.size() - kRawChunkHeaderBytes, 0};
    size_t begin = 0;
    for (size_t i = 0; i < ends.size(); ++i) {
      ZSTD_inBuffer in{data.data() + begin, ends[i] - begin, 0};
      const ZSTD_EndDirective mode = i + 1 == ends.size() ? ZSTD_e_end : ZSTD_e_flush;
      do {
        r = ZSTD_compressStream2(cctx_, &out, &in, mode);
        if (ZSTD_isError(r)) return zfail(r);
        if (r != 0 && out.pos == out.size) return Fail(base::Internal(path_ + ": zstd: output bound exceeded"));
      } while (r != 0 || in.pos < in.size);
      begin = ends[i];
    }
    EncodeRawChunkHeader(type, static_cast<uint32_t>(data.size()), out_.data() + kRawChunkHeaderBytes,
                         static_cast<uint32_t>(out.pos), out_.data());
    return WriteAll(out_.data(), kRawChunkHeaderBytes + out.pos, events);
  }

  // Whole chunks (and the header) are gathered and go to the file in one write() at each
  // Flush, or once they reach kPendingBytes: a small capture's header, strings, tracks and
  // events chunks cost one system call, not four. Nothing is counted as written before it is.
  static constexpr size_t kPendingBytes = 64 << 10;
  Status WriteAll(const char* p, size_t n, uint64_t events = 0) {
    pending_.append(p, n);
    pending_ends_.push_back({pending_.size(), (pending_ends_.empty() ? 0 : pending_ends_.back().second) + events});
    return pending_.size() >= kPendingBytes ? WritePending() : Status::Ok();
  }

  Status WritePending() {
    if (pending_.empty()) return Status::Ok();
    const char* p = pending_.data();
    size_t n = pending_.size();
    const uint64_t start = bytes_written_;
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        // A full disk (ENOSPC, EFBIG) may take part of a chunk: cut the file back to the last
        // complete chunk it got, so that it ends with a whole chunk and the space goes back to
        // the disk; the events of the chunks it holds are written, the rest are not.
        const size_t got = static_cast<size_t>(bytes_written_ - start);
        size_t keep = 0;
        uint64_t kept_events = 0;
        for (const auto& [end, evs] : pending_ends_) {
          if (end > got) break;
          keep = end;
          kept_events = evs;
        }
        if (got != keep && ::ftruncate(fd_, static_cast<off_t>(start + keep)) == 0)
          bytes_written_ = start + keep;
        if (bytes_written_ == start + keep) events_written_ += kept_events;
        pending_.clear();
        pending_ends_.clear();
        return Fail(base::IoError(path_ + ": write: " + std::strerror(e)));
      }
      p += w;
      n -= static_cast<size_t>(w);
      bytes_written_ += static_cast<uint64_t>(w);
    }
    events_written_ += pending_ends_.back().second;
    pending_.clear();
    pending_ends_.clear();
    return Status::Ok();
  }

  Status Fail(Status s) {
    failed_ = s;
    return s;
  }

  std::string path_;
  int fd_;
  size_t chunk_bytes_;
  size_t chunk_events_ = 1;
  int level_;
  RawEventEncoding encoding_;
  ZSTD_CCtx* cctx_ = nullptr;
  bool borrowed_ = false;  // cctx_, events_ and out_ come from (and go back to) t_scratch
  std::unique_ptr<ColumnarEncoder> encoder_;
  std::string strings_;
  std::string tracks_;
  std::vector<Event> events_;
  std::vector<char> out_;
  std::string pending_;  // whole chunks not yet written (WriteAll)
  std::vector<std::pair<size_t, uint64_t>> pending_ends_;  // each chunk's end, events up to it
  uint64_t bytes_written_ = 0;
  uint64_t events_written_ = 0;
  Status failed_;
};

}  // namespace

StatusOr<std::unique_ptr<RawWriter>> RawWriter::Create(const std::string& path,
                                                      const RawHeaderInfo& info,
                                                      size_t chunk_bytes, int zstd_level,
                                                      RawEventEncoding encoding) {
  chunk_bytes = std::clamp<size_t>(chunk_bytes, sizeof(Event), kRawMaxChunkBytes / 2);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return base::IoError(path + ": cannot create: " + std::strerror(errno));
  auto w = std::make_unique<RawWriterImpl>(path, fd, chunk_bytes, zstd_level, encoding);
  RLPROF_RETURN_IF_ERROR(w->WriteHeader(info));
  return std::unique_ptr<RawWriter>(std::move(w));
}

}  // namespace rlprof::format
