#include "src/format/raw.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "src/base/files.h"
#include "src/format/raw_columnar.h"
#include "src/format/raw_layout.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

// Deterministic pseudo-random numbers for the damage and fallback tests (xorshift64).
struct XorShift64 {
  uint64_t state;
  uint64_t operator()() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  fs::path dir = TestRoot() / "raw";
  fs::create_directories(dir);
  return (dir / name).string();
}

Event MakeEvent(int64_t ts, uint32_t name, uint16_t track, EventKind kind = EventKind::kComplete,
                Category cat = Category::kUser) {
  Event e{};
  e.ts_ns = ts;
  e.payload = 100 + ts;
  e.name = name;
  e.track = track;
  e.kind = kind;
  e.category = cat;
  e.arg0 = static_cast<uint32_t>(ts * 7);
  e.arg1 = 0;
  return e;
}

bool SameEvent(const Event& a, const Event& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A file of several chunks: strings + tracks, then 3 event chunks of 4 events, then more
// strings and a last partial event chunk (flushed).
std::string WriteSmallMultiChunkFile(std::vector<Event>* events) {
  std::string path = TempPath("multi.rlp");
  auto w = RawWriter::Create(path, {.rank = 3, .pid = 42, .host = "node-7"}, 4 * sizeof(Event));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  StringEntry s1{1, "rl/step"}, s2{2, "actor_update"};
  EXPECT_TRUE((*w)->AddStrings({{s1, s2}}).ok());
  TrackEntry t{1, TrackKind::kThread, 1001, 42, "main"};
  EXPECT_TRUE((*w)->AddTracks({&t, 1}).ok());
  for (int i = 0; i < 12; ++i) events->push_back(MakeEvent(i * 10, 1 + i % 2, 1));
  EXPECT_TRUE((*w)->AddEvents(*events).ok());
  StringEntry s3{3, "late"};
  EXPECT_TRUE((*w)->AddStrings({&s3, 1}).ok());
  std::vector<Event> more = {MakeEvent(500, 3, 1), MakeEvent(510, 3, 1)};
  EXPECT_TRUE((*w)->AddEvents(more).ok());
  events->insert(events->end(), more.begin(), more.end());
  EXPECT_TRUE((*w)->Close().ok());
  auto bytes = base::ReadFile(path);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

TEST(RawFormatTest, RoundTripKeepsHeaderStringsTracksAndEvents) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  auto cap = ReadRawBytes(bytes, "multi.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
  EXPECT_EQ(cap->version, kRawFormatVersion);
  EXPECT_EQ(cap->info.rank, 3);
  EXPECT_EQ(cap->info.pid, 42u);
  EXPECT_EQ(cap->info.host, "node-7");
  EXPECT_EQ(cap->str(1), "rl/step");
  EXPECT_EQ(cap->str(2), "actor_update");
  EXPECT_EQ(cap->str(3), "late");
  EXPECT_EQ(cap->str(99), "");
  ASSERT_EQ(cap->tracks.size(), 1u);
  EXPECT_EQ(cap->tracks[0].os_id, 1001u);
  EXPECT_EQ(cap->tracks[0].name, "main");
  ASSERT_EQ(cap->events.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) EXPECT_TRUE(SameEvent(cap->events[i], events[i])) << i;
  // strings, tracks, 3 full event chunks, strings, last events chunk
  EXPECT_EQ(cap->diagnostics.complete_chunks, 7u);
}

TEST(RawFormatTest, WriterCountsEventsAndBytesOnDisk) {
  std::string path = TempPath("counts.rlp");
  auto w = RawWriter::Create(path, {.rank = 0, .pid = 1, .host = "h"});
  ASSERT_TRUE(w.ok());
  std::vector<Event> ev(1000, MakeEvent(5, 0, 0));
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  EXPECT_EQ((*w)->events_written(), 0u);  // still buffered: chunk not full
  ASSERT_TRUE((*w)->Flush().ok());
  EXPECT_EQ((*w)->events_written(), 1000u);
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->bytes_written(), fs::file_size(path));
  EXPECT_FALSE((*w)->AddEvents(ev).ok());  // closed
}

// Chunks are gathered and written at each Flush (one write() for a small capture): the counts
// say what the file holds, never what is still gathered, also for whole chunks.
TEST(RawFormatTest, CountsSayWhatTheFileHoldsNotWhatIsGathered) {
  std::string path = TempPath("gathered.rlp");
  auto w = RawWriter::Create(path, {.rank = 0}, /*chunk_bytes=*/4096, /*zstd_level=*/1);
  ASSERT_TRUE(w.ok());
  std::vector<Event> ev;
  for (int i = 0; i < 1000; ++i) ev.push_back(MakeEvent(i * 1000, 0, 0));  // several whole chunks
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  EXPECT_EQ(fs::file_size(path), (*w)->bytes_written());
  EXPECT_EQ(ReadRaw(path)->events.size(), (*w)->events_written());
  ASSERT_TRUE((*w)->Flush().ok());
  EXPECT_EQ((*w)->events_written(), 1000u);
  EXPECT_EQ(fs::file_size(path), (*w)->bytes_written());
  EXPECT_EQ(ReadRaw(path)->events.size(), 1000u);
}

TEST(RawFormatTest, FlushMakesSmallBatchesReadableWhileTheWriterIsOpen) {
  std::string path = TempPath("open.rlp");
  auto w = RawWriter::Create(path, {.rank = 1, .pid = 9, .host = "h"});
  ASSERT_TRUE(w.ok());
  StringEntry s{1, "mark"};
  ASSERT_TRUE((*w)->AddStrings({&s, 1}).ok());
  Event e = MakeEvent(1, 1, 0, EventKind::kInstant);
  ASSERT_TRUE((*w)->AddEvents({&e, 1}).ok());
  ASSERT_TRUE((*w)->Flush().ok());
  auto cap = ReadRaw(path);  // the writer is still open: as if the process died now
  ASSERT_TRUE(cap.ok());
  ASSERT_EQ(cap->events.size(), 1u);
  EXPECT_EQ(cap->str(cap->events[0].name), "mark");
}

TEST(RawFormatTest, TruncationAtEveryByteGivesAPrefixOfTheEvents) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  size_t last_count = 0;
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    auto cap = ReadRawBytes(std::string_view(bytes).substr(0, cut), "cut");
    ASSERT_TRUE(cap.ok()) << "cut at " << cut << ": " << cap.status().ToString();
    const auto& got = cap->events;
    ASSERT_LE(got.size(), events.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(SameEvent(got[i], events[i])) << cut;
    EXPECT_GE(got.size(), last_count) << "events disappeared when more bytes were kept";
    last_count = got.size();
    // Nothing is ever reported as damaged, only as truncated; defs precede their uses.
    EXPECT_EQ(cap->diagnostics.bad_checksum_chunks, 0u) << cut;
    EXPECT_EQ(cap->diagnostics.undefined_string_refs, 0u) << cut;
    EXPECT_EQ(cap->diagnostics.undefined_track_refs, 0u) << cut;
    if (cut == 0) {
      EXPECT_FALSE(cap->diagnostics.header_ok);  // an empty file: killed before the header
    } else if (cut < bytes.size()) {
      bool at_boundary = cap->diagnostics.truncated_tail_bytes == 0;
      if (at_boundary) {
        EXPECT_TRUE(cap->diagnostics.header_ok) << cut;
      }
    } else {
      EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
    }
  }
  EXPECT_EQ(last_count, events.size());
}

TEST(RawFormatTest, CorruptedByteSkipsOnlyThatChunk) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  auto clean = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(clean.ok());
  size_t header = kRawHeaderFixedBytes + 6;
  // Flip one byte at each position of the body: at most one chunk may be lost.
  for (size_t pos = header; pos < bytes.size(); ++pos) {
    std::string bad = bytes;
    bad[pos] ^= 0x5A;
    auto cap = ReadRawBytes(bad, "bad");
    ASSERT_TRUE(cap.ok());
    const auto& d = cap->diagnostics;
    // A damaged length in the LAST chunk cannot be told from a torn write: it reads as a
    // truncated tail. Anywhere else it is a skipped chunk.
    uint64_t lost = d.bad_checksum_chunks + (d.truncated_tail_bytes > 0 ? 1 : 0);
    EXPECT_EQ(lost, 1u) << "flip at " << pos << ": " << d.ToString();
    if (d.truncated_tail_bytes > 0) {
      EXPECT_GE(pos, bytes.size() - 2 * sizeof(Event) - kRawChunkHeaderBytes - 64) << pos;
    }
    EXPECT_EQ(d.complete_chunks, clean->diagnostics.complete_chunks - 1) << pos;
    EXPECT_GE(cap->events.size() + 4, events.size()) << pos;  // chunks hold <= 4 events
  }
}

TEST(RawFormatTest, CorruptedEventChunkIsSkippedAndLaterChunksStillRead) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  // Find the second events chunk by walking the framing.
  size_t pos = kRawHeaderFixedBytes + 6;
  int events_chunks = 0;
  while (pos < bytes.size()) {
    uint32_t type = GetLe<uint32_t>(bytes.data() + pos + 4);
    uint32_t len = GetLe<uint32_t>(bytes.data() + pos + 12);
    if (type == static_cast<uint32_t>(RawChunkType::kEventsColumnar) && ++events_chunks == 2) {
      bytes[pos + kRawChunkHeaderBytes + len / 2] ^= 1;
      break;
    }
    pos += kRawChunkHeaderBytes + len;
  }
  auto cap = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->diagnostics.bad_checksum_chunks, 1u);
  ASSERT_EQ(cap->events.size(), events.size() - 4);
  EXPECT_TRUE(SameEvent(cap->events[3], events[3]));
  EXPECT_TRUE(SameEvent(cap->events[4], events[8]));  // events 4..7 were in the lost chunk
}

TEST(RawFormatTest, UnknownChunkTypeIsSkippedAndCounted) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  std::string payload = "future data";
  char hdr[kRawChunkHeaderBytes];
  EncodeRawChunkHeader(static_cast<RawChunkType>(77), 11, payload.data(), 11, hdr);
  std::string insert(hdr, sizeof hdr);
  insert += payload;
  size_t body = kRawHeaderFixedBytes + 6;
  bytes.insert(body, insert);
  auto cap = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->diagnostics.unknown_chunk_types, 1u);
  EXPECT_EQ(cap->diagnostics.bad_checksum_chunks, 0u);
  EXPECT_EQ(cap->events.size(), events.size());
}

TEST(RawFormatTest, UndefinedStringAndTrackIdsAreCounted) {
  std::string path = TempPath("undef.rlp");
  auto w = RawWriter::Create(path, {});
  ASSERT_TRUE(w.ok());
  StringEntry s{1, "known"};
  ASSERT_TRUE((*w)->AddStrings({&s, 1}).ok());
  std::vector<Event> ev = {MakeEvent(1, 1, 0), MakeEvent(2, 55, 0),
                           MakeEvent(3, 1, 0, EventKind::kComplete, Category::kStage)};
  ev[2].arg1 = 56;  // stage role: a string id, undefined
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto cap = ReadRaw(path);
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->diagnostics.undefined_string_refs, 2u);
  EXPECT_EQ(cap->diagnostics.undefined_track_refs, 3u);  // no track 0 was defined
  EXPECT_EQ(cap->info.rank, -1);
  EXPECT_EQ(cap->str(55), "");
}

TEST(RawFormatTest, HostileStringsSurviveByteForByte) {
  std::string path = TempPath("hostile.rlp");
  std::string nul("a\0b", 3);
  std::string invalid_utf8 = "\xff\xfe\xc3(\xe2\x82";
  std::string very_long(300000, 'x');
  std::vector<StringEntry> strings = {{1, "quote\"back\\slash"},
                                      {2, "new\nline\ttab\r\x01\x1f"},
                                      {3, nul},
                                      {4, invalid_utf8},
                                      {5, very_long},
                                      {0xFFFF0, "large id"}};
  auto w = RawWriter::Create(path, {.rank = 0, .pid = 1, .host = "h\"\n\xff"}, 1024);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->AddStrings(strings).ok());
  TrackEntry t{7, TrackKind::kCounter, 0, 1, invalid_utf8 + nul};
  ASSERT_TRUE((*w)->AddTracks({&t, 1}).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto cap = ReadRaw(path);
  ASSERT_TRUE(cap.ok());
  EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
  for (const auto& s : strings) EXPECT_EQ(cap->str(s.id), s.value) << s.id;
  EXPECT_EQ(cap->info.host, "h\"\n\xff");
  ASSERT_EQ(cap->tracks.size(), 1u);
  EXPECT_EQ(cap->tracks[0].name, invalid_utf8 + nul);
  EXPECT_EQ(cap->tracks[0].kind, TrackKind::kCounter);
}

TEST(RawFormatTest, HostileSparseStringIdsDoNotExhaustMemory) {
  std::string path = TempPath("sparse.rlp");
  auto w = RawWriter::Create(path, {});
  ASSERT_TRUE(w.ok());
  StringEntry s{0xFFFFFFF0u, "far away"};
  ASSERT_TRUE((*w)->AddStrings({&s, 1}).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto cap = ReadRaw(path);
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->diagnostics.bad_records, 1u);
  EXPECT_LT(cap->strings.size(), 1u << 20);
  EXPECT_EQ(cap->str(0xFFFFFFF0u), "");
}

TEST(RawFormatTest, NonRlprofFileIsAnError) {
  auto cap = ReadRawBytes("{\"traceEvents\": []}", "trace.json");
  ASSERT_FALSE(cap.ok());
  EXPECT_NE(cap.status().message().find("trace.json"), std::string::npos);
  EXPECT_FALSE(ReadRaw(TempPath("does-not-exist.rlp")).ok());
}

TEST(RawFormatTest, NewerFormatVersionIsRefusedWithAClearMessage) {
  std::string h = EncodeRawHeader({}, 16);
  uint32_t v = kRawFormatVersion + 1;
  std::memcpy(h.data() + 8, &v, 4);
  // A real newer file has a header whose checksum covers its version.
  const uint32_t crc = RawCrc32(0, h.data(), h.size() - 4);
  std::memcpy(h.data() + h.size() - 4, &crc, 4);
  auto cap = ReadRawBytes(h, "new.rlp");
  ASSERT_FALSE(cap.ok());
  EXPECT_NE(cap.status().message().find("newer"), std::string::npos);
}

// Issue 10: a flipped version byte (checksum wrong) rejected the whole capture; it is damage
// to the header only, and the chunks are read.
TEST(RawFormatTest, AFlippedVersionByteIsHeaderDamageNotANewerFile) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  bytes[8] ^= 0x40;
  auto cap = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  EXPECT_FALSE(cap->diagnostics.header_ok);
  EXPECT_EQ(cap->events.size(), events.size());
}

// An events chunk of zero bytes reached memcpy(NULL, …, 0) (undefined behaviour).
TEST(RawFormatTest, AnEmptyEventsChunkIsHarmless) {
  std::string bytes = EncodeRawHeader({}, 16);
  char h[kRawChunkHeaderBytes];
  const std::string payload("\x28\xb5\x2f\xfd\x20\x00\x01\x00\x00", 9);  // zstd frame of 0 bytes
  EncodeRawChunkHeader(RawChunkType::kEvents, 0, payload.data(), static_cast<uint32_t>(payload.size()), h);
  bytes.append(h, sizeof h);
  bytes += payload;
  auto cap = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(cap.ok());
  EXPECT_TRUE(cap->events.empty());
  EXPECT_EQ(cap->diagnostics.bad_payload_chunks, 0u) << cap->diagnostics.ToString();
}

TEST(RawFormatTest, DamagedHeaderStillYieldsTheChunks) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  bytes[20] ^= 0xFF;  // inside rank
  auto cap = ReadRawBytes(bytes, "x");
  ASSERT_TRUE(cap.ok());
  EXPECT_FALSE(cap->diagnostics.header_ok);
  EXPECT_EQ(cap->events.size(), events.size());
  EXPECT_NE(cap->diagnostics.ToString().find("header"), std::string::npos);
}

// A full disk (here EFBIG: files may not grow past 16 KiB) takes part of a chunk; the writer cuts
// it off again, so the file ends with its last complete chunk and reads clean.
TEST(RawFormatTest, AWriteThatFillsTheDiskLeavesOnlyCompleteChunks) {
  const std::string path = TempPath("full.rlp");
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{16 << 10, 16 << 10};
    setrlimit(RLIMIT_FSIZE, &lim);
    auto w = RawWriter::Create(path, {.rank = 0}, 4096, /*zstd_level=*/1);
    if (!w.ok()) _exit(1);
    StringEntry name{1, "noise"};
    TrackEntry track{1, TrackKind::kThread, 1001, 42, "main"};
    if (!(*w)->AddStrings({&name, 1}).ok() || !(*w)->AddTracks({&track, 1}).ok()) _exit(5);
    std::vector<Event> ev;
    for (int i = 0; i < 100000; ++i) ev.push_back(MakeEvent((i * 7919) % 100003 * 1000 + i, 1, 1));
    base::Status s = (*w)->AddEvents(ev);
    if (s.ok()) s = (*w)->Flush();
    if (s.ok() || s.code() != base::StatusCode::kIoError) _exit(2);
    std::error_code ec;
    if (fs::file_size(path, ec) != (*w)->bytes_written()) _exit(3);
    _exit((*w)->events_written() > 0 ? 0 : 4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto cap = ReadRaw(path);
  ASSERT_TRUE(cap.ok());
  EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
  EXPECT_GT(cap->events.size(), 0u);
}

TEST(RawFormatTest, UnwritablePathIsAnIoError) {
  auto w = RawWriter::Create("/nonexistent-dir/x/events.rlp", {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), base::StatusCode::kIoError);
}

}  // namespace
}  // namespace rlprof::format

namespace rlprof::format {
namespace {

// Deterministic random damage (bytes overwritten, inserted, removed; lengths forged): the
// reader must never crash, and must never return more events than were written.
TEST(RawFormatTest, RandomDamageNeverCrashesTheReader) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  XorShift64 next{0x9E3779B97F4A7C15ull};
  for (int round = 0; round < 3000; ++round) {
    std::string bad = bytes;
    int edits = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < edits && !bad.empty(); ++k) {
      size_t pos = next() % bad.size();
      switch (next() % 4) {
        case 0: bad[pos] = static_cast<char>(next()); break;
        case 1: bad.insert(pos, 1, static_cast<char>(next())); break;
        case 2: bad.erase(pos, 1 + next() % 16); break;
        default: {  // forge a 32-bit field (a length, an id) with a large value
          uint32_t v = static_cast<uint32_t>(next());
          if (pos + 4 <= bad.size()) std::memcpy(bad.data() + pos, &v, 4);
        }
      }
    }
    auto cap = ReadRawBytes(bad, "fuzz");
    if (cap.ok()) {
      EXPECT_LE(cap->events.size(), events.size()) << round;
    }
  }
}

}  // namespace
}  // namespace rlprof::format

// Columnar events chunks (format version 2): round trips, the records/columnar fallback,
// version-1 files, and corrupt payloads that pass their checksum.
namespace rlprof::format {
namespace {

// A chunk of type `type` whose payload is `raw`, sealed as the writer would (zstd + crc).
std::string SealChunk(RawChunkType type, std::string_view raw) {
  std::string packed(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  packed.resize(n);
  char h[kRawChunkHeaderBytes];
  EncodeRawChunkHeader(type, static_cast<uint32_t>(raw.size()), packed.data(),
                       static_cast<uint32_t>(packed.size()), h);
  return std::string(h, sizeof h) + packed;
}

std::vector<Event> WriteAndRead(const std::vector<Event>& events, size_t chunk_bytes = 1 << 20,
                                RawDiagnostics* diag = nullptr) {
  const std::string path = TempPath("columnar.rlp");
  auto w = RawWriter::Create(path, {.rank = 0, .pid = 1, .host = "h"}, chunk_bytes);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE((*w)->AddEvents(events).ok());
  EXPECT_TRUE((*w)->Close().ok());
  auto cap = ReadRaw(path);
  EXPECT_TRUE(cap.ok());
  if (diag != nullptr) *diag = cap->diagnostics;
  return cap.ok() ? cap->events : std::vector<Event>{};
}

void ExpectSameEvents(const std::vector<Event>& got, const std::vector<Event>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(SameEvent(got[i], want[i]))
        << i << ": ts " << got[i].ts_ns << " vs " << want[i].ts_ns << ", payload " << got[i].payload
        << " vs " << want[i].payload;
  }
}

// The chunk types of a file, in order.
std::vector<uint32_t> ChunkTypes(const std::string& bytes) {
  std::vector<uint32_t> types;
  size_t pos = GetLe<uint32_t>(bytes.data() + 12);
  while (pos + kRawChunkHeaderBytes <= bytes.size()) {
    types.push_back(GetLe<uint32_t>(bytes.data() + pos + 4));
    pos += kRawChunkHeaderBytes + GetLe<uint32_t>(bytes.data() + pos + 12);
  }
  return types;
}

// Operators as a thread records them: in the order they end, each parent after its children.
std::vector<Event> NestedOperators(int n, uint16_t track, int64_t t0) {
  std::vector<Event> ev;
  int64_t t = t0;
  uint32_t seq = 100;
  while (static_cast<int>(ev.size()) < n) {
    const int64_t parent_begin = t;
    t += 300;
    for (int c = 0; c < 3; ++c) {
      Event e = MakeEvent(t, 10 + static_cast<uint32_t>(c), track, EventKind::kComplete, Category::kOperator);
      e.payload = 900 + 37 * c;
      e.arg0 = c == 1 ? UINT32_MAX : seq++;
      e.arg1 = 5 + static_cast<uint32_t>(c);
      ev.push_back(e);
      t += e.payload + 150;
    }
    Event p = MakeEvent(parent_begin, 9, track, EventKind::kComplete, Category::kOperator);
    p.payload = t + 80 - parent_begin;
    p.arg0 = seq++;
    ev.push_back(p);
    t += 500;
  }
  return ev;
}

TEST(RawColumnarTest, EveryKindAndCategoryRoundTrips) {
  std::vector<Event> ev;
  const EventKind kinds[] = {EventKind::kComplete, EventKind::kBegin, EventKind::kEnd,
                             EventKind::kInstant, EventKind::kCounter};
  int64_t t = 1'000'000;
  for (EventKind k : kinds) {
    for (int c = 0; c <= static_cast<int>(Category::kStack); ++c) {
      Event e = MakeEvent(t, static_cast<uint32_t>(c + 1), static_cast<uint16_t>(c % 3), k,
                          static_cast<Category>(c));
      e.payload = k == EventKind::kCounter ? 0 : 17 * c;
      if (k == EventKind::kCounter) e.set_counter_value(1.5 * c);
      e.arg1 = static_cast<uint32_t>(c * 3);
      ev.push_back(e);
      t += 1000 - 13 * c;
    }
  }
  ExpectSameEvents(WriteAndRead(ev), ev);
  ExpectSameEvents(WriteAndRead(ev, 4 * sizeof(Event)), ev);  // many small chunks
}

TEST(RawColumnarTest, ExtremeValuesRoundTripBitForBit) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<Event> ev;
  auto add = [&](int64_t ts, int64_t payload, EventKind k = EventKind::kComplete, uint16_t track = 1) {
    Event e = MakeEvent(0, UINT32_MAX, track, k, Category::kOperator);
    e.ts_ns = ts;
    e.payload = payload;
    ev.push_back(e);
  };
  add(kMin, kMax);  // ends at −1 (wrapping)
  add(kMax, kMax);  // end overflows
  add(kMax, kMin);
  add(kMin, kMin);
  add(0, -5);  // negative duration
  add(-1, 1);
  add(kMax, 0, EventKind::kInstant);
  add(kMin, kMax, EventKind::kBegin, 65535);
  add(kMax, kMin, EventKind::kEnd, 65535);
  add(1, 1'000'000'000'000'000'000);  // huge gaps
  add(-1'000'000'000'000'000'000, 3);
  for (double v : {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::infinity(), -0.0, 0.0, 5e-324, 1.7976931348623157e308}) {
    Event e = MakeEvent(7, 2, 3, EventKind::kCounter, Category::kMemory);
    e.set_counter_value(v);
    ev.push_back(e);
  }
  Event nan_bits = MakeEvent(8, 2, 3, EventKind::kCounter, Category::kMemory);
  nan_bits.payload = static_cast<int64_t>(0xFFF8'0000'DEAD'BEEFull);  // a NaN with a payload
  ev.push_back(nan_bits);
  Event args = MakeEvent(9, UINT32_MAX, 65535, EventKind::kInstant, static_cast<Category>(255));
  args.arg0 = 0;
  args.arg1 = UINT32_MAX - 1;
  ev.push_back(args);
  args.arg0 = UINT32_MAX - 1;
  args.arg1 = 0;
  ev.push_back(args);
  RawDiagnostics d;
  ExpectSameEvents(WriteAndRead(ev, 1 << 20, &d), ev);
  EXPECT_EQ(d.bad_payload_chunks, 0u);
}

TEST(RawColumnarTest, NestedOperatorsRoundTripAndTakeFewBytes) {
  std::vector<Event> ev = NestedOperators(4000, 2, 5'000'000'000);
  std::vector<Event> other = NestedOperators(2000, 3, 5'000'000'100);
  ev.insert(ev.end(), other.begin(), other.end());
  std::vector<Event> deep;  // a long parent over more children than a stack keeps
  for (int i = 0; i < 1000; ++i) deep.push_back(MakeEvent(10'000 + 10 * i, 4, 4));
  deep.push_back(MakeEvent(9'000, 5, 4));
  deep.back().payload = 20'000;
  ev.insert(ev.end(), deep.begin(), deep.end());
  ExpectSameEvents(WriteAndRead(ev), ev);
  const std::string path = TempPath("columnar.rlp");
  EXPECT_LT(fs::file_size(path), ev.size() * 2);  // records: 32 bytes before zstd
}

// Events no predictor helps (random values) would take more room as columns than as records:
// the writer keeps records for them, so a chunk never grows past 32 bytes an event before zstd.
TEST(RawColumnarTest, IncompressibleEventsFallBackToRecords) {
  XorShift64 next{88172645463325252ull};
  std::vector<Event> ev(500);
  for (Event& e : ev) {
    e.ts_ns = static_cast<int64_t>(next());
    e.payload = static_cast<int64_t>(next());
    e.name = static_cast<uint32_t>(next());
    e.track = static_cast<uint16_t>(next() | 0x8000);
    e.kind = EventKind::kComplete;
    e.category = Category::kUser;
    e.arg0 = static_cast<uint32_t>(next());
    e.arg1 = static_cast<uint32_t>(next());
  }
  ExpectSameEvents(WriteAndRead(ev), ev);
  auto bytes = base::ReadFile(TempPath("columnar.rlp"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(ChunkTypes(*bytes), std::vector<uint32_t>{static_cast<uint32_t>(RawChunkType::kEvents)});
}

TEST(RawColumnarTest, WriterEmitsColumnarChunksUnderVersion2) {
  std::vector<Event> events;
  std::string bytes = WriteSmallMultiChunkFile(&events);
  EXPECT_EQ(GetLe<uint32_t>(bytes.data() + 8), 2u);
  const auto c = static_cast<uint32_t>(RawChunkType::kEventsColumnar);
  EXPECT_EQ(ChunkTypes(bytes), (std::vector<uint32_t>{1, 2, c, c, c, 1, c}));
}

TEST(RawColumnarTest, TheRecordsEncodingStillWritesRecordsChunks) {
  std::vector<Event> ev = NestedOperators(100, 1, 10);
  const std::string path = TempPath("records.rlp");
  auto w = RawWriter::Create(path, {}, 1 << 20, 1, RawEventEncoding::kRecords);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->AddEvents(ev).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto bytes = base::ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(ChunkTypes(*bytes), std::vector<uint32_t>{static_cast<uint32_t>(RawChunkType::kEvents)});
  auto cap = ReadRawBytes(*bytes, "records.rlp");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->version, 2u);
  ExpectSameEvents(cap->events, ev);
}

// Version-1 files (records chunks) and files mixing both chunk types read as before.
TEST(RawColumnarTest, Version1AndMixedFilesAreRead) {
  std::vector<Event> a = NestedOperators(40, 1, 1000), b = NestedOperators(40, 1, 900'000);
  std::string v1 = EncodeRawHeader({.rank = 4, .pid = 2, .host = "old"}, 64);
  uint32_t one = 1;
  std::memcpy(v1.data() + 8, &one, 4);
  const uint32_t crc = RawCrc32(0, v1.data(), v1.size() - 4);
  std::memcpy(v1.data() + v1.size() - 4, &crc, 4);
  const std::string header_v1 = v1;
  v1 += SealChunk(RawChunkType::kEvents, {reinterpret_cast<const char*>(a.data()), a.size() * sizeof(Event)});
  auto cap = ReadRawBytes(v1, "v1.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  EXPECT_EQ(cap->version, 1u);
  EXPECT_TRUE(cap->diagnostics.header_ok);
  EXPECT_EQ(cap->diagnostics.complete_chunks, 1u);  // (no strings nor tracks defined here)
  ExpectSameEvents(cap->events, a);

  ColumnarEncoder enc;
  std::string mixed = v1 + SealChunk(RawChunkType::kEventsColumnar, enc.Encode(b)) +
                      SealChunk(RawChunkType::kEvents, {reinterpret_cast<const char*>(b.data()), b.size() * sizeof(Event)});
  cap = ReadRawBytes(mixed, "mixed.rlp");
  ASSERT_TRUE(cap.ok());
  std::vector<Event> want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), b.begin(), b.end());
  ExpectSameEvents(cap->events, want);
  EXPECT_EQ(cap->diagnostics.complete_chunks, 3u);
  EXPECT_EQ(cap->diagnostics.bad_payload_chunks, 0u);
}

// The version-1 captures kept in the repository still read clean.
TEST(RawColumnarTest, Version1CapturesInTheRepositoryStillRead) {
  const fs::path root = fs::path(RLPROF_SOURCE_DIR) / "test";
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().filename() != "events.rlp") continue;
    auto cap = ReadRaw(entry.path().string());
    ASSERT_TRUE(cap.ok()) << entry.path();
    EXPECT_EQ(cap->version, 1u) << entry.path();
    EXPECT_TRUE(cap->diagnostics.clean()) << entry.path() << ": " << cap->diagnostics.ToString();
    EXPECT_GT(cap->events.size(), 0u) << entry.path();
    // Written again as version 2, every event comes back the same.
    ExpectSameEvents(WriteAndRead(cap->events), cap->events);
    ++files;
  }
  EXPECT_GE(files, 8);
}

// test/fuzz/make_seeds.py writes each version-1 seed again as version 2 with a columnar encoder
// of its own, written from docs/formats.md alone: both must read as the same events.
TEST(RawColumnarTest, ChunksEncodedFromTheDocumentReadAsTheirVersion1Twins) {
  const fs::path dir = fs::path(RLPROF_SOURCE_DIR) / "test/fuzz/corpus/rlp_file";
  int pairs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with("_v2.rlp")) continue;
    auto v2 = ReadRaw(entry.path().string());
    auto v1 = ReadRaw((dir / (name.substr(0, name.size() - 7) + ".rlp")).string());
    ASSERT_TRUE(v1.ok() && v2.ok()) << name;
    EXPECT_EQ(v2->version, 2u) << name;
    EXPECT_EQ(v2->diagnostics.bad_payload_chunks, 0u) << name;
    EXPECT_EQ(v2->diagnostics.complete_chunks, v1->diagnostics.complete_chunks) << name;
    ExpectSameEvents(v2->events, v1->events);
    auto bytes = base::ReadFile(entry.path().string());
    ASSERT_TRUE(bytes.ok());
    const auto types = ChunkTypes(*bytes);
    EXPECT_NE(std::find(types.begin(), types.end(), 4u), types.end()) << name;
    ++pairs;
  }
  EXPECT_GE(pairs, 5);
}

TEST(RawColumnarTest, TruncatedFileYieldsItsCompleteColumnarChunks) {
  std::vector<Event> ev = NestedOperators(400, 2, 77'000);
  WriteAndRead(ev, 64 * sizeof(Event));
  auto bytes = base::ReadFile(TempPath("columnar.rlp"));
  ASSERT_TRUE(bytes.ok());
  ASSERT_GT(ChunkTypes(*bytes).size(), 5u);
  for (size_t cut = 0; cut <= bytes->size(); cut += 7) {
    auto cap = ReadRawBytes(std::string_view(*bytes).substr(0, cut), "cut");
    ASSERT_TRUE(cap.ok());
    const size_t n = cap->events.size();
    ASSERT_TRUE(n % 64 == 0 || n == ev.size()) << cut << ": " << n;  // whole chunks only
    for (size_t i = 0; i < cap->events.size(); ++i) ASSERT_TRUE(SameEvent(cap->events[i], ev[i])) << cut;
    EXPECT_EQ(cap->diagnostics.bad_payload_chunks + cap->diagnostics.bad_checksum_chunks, 0u) << cut;
  }
}

// A payload that passes its checksum but does not add up: the chunk's events are lost and
// counted, nothing else. Each case would crash, hang or allocate without its check.
TEST(RawColumnarTest, CorruptColumnarPayloadsAreCountedAndSkipped) {
  std::vector<Event> good = NestedOperators(16, 1, 500);
  ColumnarEncoder enc;
  const std::string valid = enc.Encode(good);
  auto varint = [](uint64_t v) {
    std::string s;
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
    return s;
  };
  // A payload of `n` events whose columns are `cols` (each given whole).
  auto payload = [&](uint64_t n, const std::vector<std::string>& cols) {
    std::string p = varint(n);
    for (const auto& c : cols) p += varint(c.size());
    for (const auto& c : cols) p += c;
    return p;
  };
  const std::string one(1, '\0');
  const std::string complete(1, '\1');
  std::vector<std::pair<std::string, std::string>> cases = {
      {"empty payload", ""},
      {"count only", varint(3)},
      {"count past the limit", varint(kColumnarMaxEvents + 1) + std::string(9, '\0')},
      {"huge count, tiny columns", payload(1'000'000, std::vector<std::string>(9, one))},
      {"column lengths past the end", varint(1) + varint(1ull << 40) + std::string(8, '\1') + "x"},
      {"bytes left over", payload(1, std::vector<std::string>(9, one)) + "z"},
      {"varint never ends", payload(1, {complete, one, one, one, std::string(11, '\x80'), one, one, one, one})},
      {"varint past 64 bits", payload(1, {complete, one, one, one, std::string(9, '\xff') + "\x02", one, one, one, one})},
      {"varint runs off its column", payload(1, {complete, one, "\x80", one, one, one, one, one, one})},
      {"track past 65535", payload(1, {complete, one, varint(65536), one, one, one, one, one, one})},
      {"name past 32 bits", payload(1, {complete, one, one, one, one, one, varint(1ull << 32), one, one})},
      {"argument code past 32 bits", payload(1, {complete, one, one, one, one, one, one, varint((1ull << 32) + 1), one})},
      {"pops more ranges than the track has", payload(1, {complete, one, one, varint(1), one, one, one, one, one})},
      {"kind column shorter than the count", payload(2, {complete, "\0\0", "\0\0", "\0\0", "\0\0", "\0\0", "\0\0", "\0\0", "\0\0"})},
      {"a column with a value over", payload(1, {complete, one, "\0\0", one, one, one, one, one, one})},
      {"valid payload cut short", valid.substr(0, valid.size() - 1)},
  };
  for (const auto& [what, raw] : cases) {
    std::string file = EncodeRawHeader({}, 16) + SealChunk(RawChunkType::kEventsColumnar, valid) +
                       SealChunk(RawChunkType::kEventsColumnar, raw) +
                       SealChunk(RawChunkType::kEventsColumnar, valid);
    auto cap = ReadRawBytes(file, "corrupt");
    ASSERT_TRUE(cap.ok()) << what;
    EXPECT_EQ(cap->diagnostics.bad_payload_chunks, 1u) << what;
    EXPECT_EQ(cap->diagnostics.complete_chunks, 2u) << what;
    ASSERT_EQ(cap->events.size(), 2 * good.size()) << what;
    EXPECT_TRUE(SameEvent(cap->events[good.size()], good[0])) << what;
  }
  // Sanity: the helpers make a valid chunk when nothing is wrong.
  std::vector<Event> out;
  ColumnarDecoder dec;
  EXPECT_TRUE(dec.Decode(payload(1, {complete, one, one, one, one, one, one, one, one}), &out));
  EXPECT_TRUE(dec.Decode(valid, &out));
}

// Random damage inside a columnar payload (past the checksum, as a buggy writer could make):
// the decoder never crashes and appends either all of a chunk's events or none.
TEST(RawColumnarTest, RandomDamageInsideAPayloadNeverCrashes) {
  std::vector<Event> good = NestedOperators(64, 1, 500);
  ColumnarEncoder enc;
  const std::string valid = enc.Encode(good);
  ColumnarDecoder dec;
  XorShift64 next{0x2545F4914F6CDD1Dull};
  for (int round = 0; round < 20000; ++round) {
    std::string bad = valid;
    for (int k = 0, edits = 1 + static_cast<int>(next() % 3); k < edits; ++k) {
      size_t pos = next() % bad.size();
      if (next() % 4 == 0) bad.erase(pos, 1);
      else bad[pos] = static_cast<char>(next());
    }
    std::vector<Event> out;
    if (dec.Decode(bad, &out)) {
      EXPECT_EQ(out.size(), good.size()) << round;
    } else {
      EXPECT_TRUE(out.empty()) << round;
    }
  }
}

}  // namespace
}  // namespace rlprof::format
