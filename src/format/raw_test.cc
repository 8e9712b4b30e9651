#include "src/format/raw.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/base/files.h"
#include "src/format/raw_layout.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

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
    if (type == static_cast<uint32_t>(RawChunkType::kEvents) && ++events_chunks == 2) {
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
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
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
