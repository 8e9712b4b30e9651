#include "src/runtime/thread_buffer.h"

#include <thread>

#include <gtest/gtest.h>

#include "src/runtime/clock.h"
#include "src/runtime/interner.h"

namespace rlprof::runtime {
namespace {

struct Drained {
  uint64_t records = 0;
  uint64_t dropped = 0;
  std::vector<Record> all;
};

// What a writer would see: every handed-off chunk plus the current ones.
Drained DrainEverything(Recorder& rec) {
  Drained d;
  auto take = [&](Chunk* c) {
    const uint32_t n = c->count.load(std::memory_order_acquire);
    for (uint32_t i = c->consumed; i < n; ++i) d.all.push_back(c->records()[i]);
    d.records += n - c->consumed;
    c->consumed = n;
    d.dropped += c->dropped.load() - c->dropped_seen;
    c->dropped_seen = c->dropped.load();
  };
  for (Chunk* c = rec.TakeHandoffs(); c != nullptr;) {
    Chunk* next = c->next;
    take(c);
    rec.Recycle(c);
    c = next;
  }
  rec.ForEachCurrentChunk(take);
  return d;
}

TEST(RecordTest, RecordIsThirtyTwoBytes) { EXPECT_EQ(sizeof(Record), 32u); }

TEST(RecorderTest, MarkerOutsideAWindowRecordsNothing) {
  Recorder& rec = Recorder::Get();
  rec.BeginSession({.capacity = 64, .policy = config::BufferPolicy::kFlush, .spare_chunks = 1});
  EXPECT_FALSE(Recording());
  Mark("outside");
  { RLPROF_RANGE("outside range"); }
  EXPECT_EQ(RangeStart("outside async"), 0u);
  const Drained d = DrainEverything(rec);
  EXPECT_EQ(d.records, 0u);
  rec.EndSession();
}

TEST(RecorderTest, DropPolicyKeepsTheFirstRecordsAndCountsTheRestExactly) {
  Recorder& rec = Recorder::Get();
  rec.BeginSession({.capacity = 16, .policy = config::BufferPolicy::kDrop, .spare_chunks = 2});
  const uint32_t gen = rec.OpenWindow();
  ASSERT_NE(gen, 0u);
  for (int i = 0; i < 100; ++i) Mark("m");
  rec.CloseWindow(gen);
  const Drained d = DrainEverything(rec);
  EXPECT_EQ(d.records, 16u);
  EXPECT_EQ(d.dropped, 84u);
  EXPECT_EQ(rec.stats().handoffs, 0u);
  rec.EndSession();
}

TEST(RecorderTest, FlushPolicyHandsFullChunksOffUntilNoSpareIsLeft) {
  Recorder& rec = Recorder::Get();
  // Pool target: one chunk per known thread (at least 1) + 2 spares = 3 chunks.
  rec.BeginSession({.capacity = 16, .policy = config::BufferPolicy::kFlush, .spare_chunks = 2});
  ASSERT_EQ(rec.pool_size(), 3u);
  const uint32_t gen = rec.OpenWindow();
  for (int i = 0; i < 100; ++i) Mark("m");
  rec.CloseWindow(gen);
  const Drained d = DrainEverything(rec);
  EXPECT_EQ(d.records, 48u);  // three chunks of 16
  EXPECT_EQ(d.dropped, 52u);
  EXPECT_EQ(rec.stats().handoffs, 2u);
  rec.EndSession();
}

TEST(RecorderTest, FlushPolicyLosesNothingWhileTheWriterRecycles) {
  Recorder& rec = Recorder::Get();
  rec.BeginSession({.capacity = 16, .policy = config::BufferPolicy::kFlush, .spare_chunks = 1});
  const uint32_t gen = rec.OpenWindow();
  uint64_t total = 0, dropped = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) Mark("m");
    const Drained d = DrainEverything(rec);  // the writer's part: drain and recycle
    total += d.records;
    dropped += d.dropped;
  }
  rec.CloseWindow(gen);
  const Drained d = DrainEverything(rec);
  EXPECT_EQ(total + d.records, 200u);
  EXPECT_EQ(dropped + d.dropped, 0u);
  rec.EndSession();
}

TEST(RecorderTest, RecordsCarryTicksNamesTracksAndKinds) {
  Recorder& rec = Recorder::Get();
  rec.BeginSession({.capacity = 64});
  const uint32_t gen = rec.OpenWindow();
  const uint64_t before = internal::ReadTicks();
  { RLPROF_RANGE("range a"); }
  Mark("mark b");
  Counter("counter c", 2.5);
  const uint64_t id = RangeStart("async d");
  std::thread([id] { RangeEnd(id); }).join();
  const uint64_t after = internal::ReadTicks();
  rec.CloseWindow(gen);
  const Drained d = DrainEverything(rec);
  ASSERT_EQ(d.records, 5u);
  std::vector<std::string> names;
  for (const Record& r : d.all) {
    names.push_back(rec.interner().Lookup(r.name));
    EXPECT_GE(static_cast<uint64_t>(r.ts_ns), before);
    EXPECT_LE(static_cast<uint64_t>(r.ts_ns), after);
  }
  // The end ran on another thread: its record sits in that thread's chunk (drained last or
  // first depending on registration order), so compare as a set.
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"", "async d", "counter c", "mark b", "range a"}));
  uint16_t main_track = 0;
  for (const Record& r : d.all)
    if (r.kind == format::EventKind::kComplete) main_track = r.track;
  for (const Record& r : d.all) {
    if (r.kind == format::EventKind::kCounter) {
      EXPECT_EQ(r.counter_value(), 2.5);
    }
    if (r.kind == format::EventKind::kBegin || r.kind == format::EventKind::kEnd) {
      EXPECT_EQ(static_cast<uint64_t>(r.payload), id);
      // Begin and end (on another thread) share the starting thread's async track.
      const format::TrackEntry t = rec.TrackInfo(r.track);
      EXPECT_EQ(t.kind, format::TrackKind::kAsync);
      EXPECT_EQ(t.name, rec.TrackInfo(main_track).name + " (async)");
    }
    if (r.kind == format::EventKind::kComplete) {
      EXPECT_GE(r.payload, 0);
    }
  }
  EXPECT_EQ(rec.stats().threads, 2u);
  rec.EndSession();
}

TEST(RecorderTest, RangeEndingInALaterWindowIsNotRecorded) {
  Recorder& rec = Recorder::Get();
  rec.BeginSession({.capacity = 64});
  uint32_t gen = rec.OpenWindow();
  const uint64_t id = RangeStart("straddles");
  rec.CloseWindow(gen);
  gen = rec.OpenWindow();
  RangeEnd(id);
  rec.CloseWindow(gen);
  const Drained d = DrainEverything(rec);
  ASSERT_EQ(d.records, 1u);
  EXPECT_EQ(d.all[0].kind, format::EventKind::kBegin);
  rec.EndSession();
}

TEST(InternerTest, EqualContentsAtDifferentAddressesShareAnId) {
  Interner in;
  const std::string a = "forward", b = "forward";
  const uint32_t ia = in.InternPointer(a.c_str());
  EXPECT_NE(ia, 0u);
  EXPECT_EQ(in.InternPointer(b.c_str()), ia);
  EXPECT_EQ(in.InternString("forward"), ia);
  EXPECT_EQ(in.InternPointer(nullptr), 0u);
  EXPECT_EQ(in.InternString(""), 0u);
  std::vector<format::StringEntry> out;
  EXPECT_EQ(in.size(), 2u);
  in.CopyIds({ia, 0, 99}, &out);  // 0 ("") and unknown ids are left out
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, ia);
  EXPECT_EQ(out[0].value, "forward");
}

TEST(InternerTest, StableNameReturnsOnePointerPerContent) {
  std::string dyn = "batch 7";
  const char* p = InternName(dyn);
  dyn[0] = 'X';
  EXPECT_STREQ(p, "batch 7");
  EXPECT_EQ(InternName("batch 7"), p);
}

TEST(NameCacheTest, MissesThenHits) {
  NameCache c;
  static const char kName[] = "x";
  EXPECT_EQ(c.Lookup(kName), NameCache::kMiss);
  c.Insert(kName, 7);
  EXPECT_EQ(c.Lookup(kName), 7u);
  c.Clear();
  EXPECT_EQ(c.Lookup(kName), NameCache::kMiss);
}

TEST(ClockTest, ConverterMapsTicksLinearly) {
  TickConverter c;
  c.source = ClockSource::kTsc;
  c.anchor_ticks = 1000;
  c.anchor_ns = 5000;
  c.mult = uint64_t{1} << 31;  // 0.5 ns per tick (2 GHz)
  EXPECT_EQ(c.ToNs(1000), 5000);
  EXPECT_EQ(c.ToNs(3000), 6000);
  EXPECT_EQ(c.ToNs(0), 4500);  // before the anchor
  EXPECT_EQ(c.DurationNs(4000), 2000);
  EXPECT_DOUBLE_EQ(c.tick_hz(), 2e9);
}

TEST(ClockTest, CalibratedTicksLandOnTheMonotonicTimeline) {
  for (bool allow_tsc : {false, true}) {
    const ClockCalibration cal = CalibrateClock(allow_tsc, 5);
    if (!allow_tsc) {
      EXPECT_EQ(cal.converter.source, ClockSource::kMonotonic);
    }
    const uint64_t t = internal::ReadTicks();
    const int64_t mono = MonotonicNowNs();
    const TickConverter conv = Refine(cal, SampleClock(cal.converter.source));
    // The conversion of a tick read just before a monotonic read lands just before it
    // (generous bound: this is a correctness check of the mapping, not a speed test).
    EXPECT_LE(conv.ToNs(t), mono + 1000000);
    EXPECT_GE(conv.ToNs(t), mono - 5000000);
    if (cal.converter.source == ClockSource::kTsc) {
      EXPECT_GT(cal.converter.tick_hz(), 1e8);
      EXPECT_TRUE(HasInvariantTsc());
    }
  }
  CalibrateClock(true, 5);
}

}  // namespace
}  // namespace rlprof::runtime
