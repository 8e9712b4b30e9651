#include "src/analysis/model/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

namespace rlprof::analysis {
namespace {

TEST(TraceTest, FinalizeSortsPerTrackAndLinksParents) {
  Trace t;
  uint32_t a = t.ThreadTrack(1, 10);
  uint32_t b = t.ThreadTrack(1, 11);
  EXPECT_EQ(t.ThreadTrack(1, 10), a);
  t.AddSlice(150, 10, t.Intern("inner"), 0, a);
  t.AddSlice(100, 100, t.Intern("outer"), 0, a);
  t.AddSlice(120, 5, t.Intern("other"), 0, b);
  t.AddSlice(300, 0, t.Intern("mark"), 0, a, SliceKind::kInstant);
  t.Finalize();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.str(t.name[0]), "outer");
  EXPECT_EQ(t.str(t.name[1]), "inner");
  EXPECT_EQ(t.parent[1], 0);
  EXPECT_EQ(t.parent[0], -1);
  EXPECT_EQ(t.parent[2], -1);  // starts after outer ends
  EXPECT_EQ(t.str(t.name[3]), "other");
  EXPECT_EQ(t.diagnostics.Get("improper_nesting"), 0u);
}

TEST(TraceTest, FinalizeOrdersLikeAStableSortByTrackTimeAndLongestFirst) {
  // Rows in random order over several tracks, with ties in ts and in (ts, dur): every column
  // must follow the order a stable sort by (track, ts, -dur) gives, ties in file order.
  std::mt19937 rng(7);
  Trace t;
  std::vector<uint32_t> tracks;
  for (int i = 0; i < 5; ++i) tracks.push_back(t.ThreadTrack(1, 100 + i));
  const size_t n = 5000;
  for (size_t i = 0; i < n; ++i) {
    uint32_t tr = tracks[rng() % tracks.size()];
    int64_t ts = static_cast<int64_t>(rng() % 200) * 10;
    int64_t dur = static_cast<int64_t>(rng() % 3) * 5;
    size_t row = t.AddSlice(ts, dur, t.Intern("s" + std::to_string(i)), 0, tr);
    t.correlation[row] = static_cast<int64_t>(i);
    t.bytes[row] = static_cast<int64_t>(i) * 3;
    t.external[row] = static_cast<int64_t>(i) + 1;
  }
  std::vector<size_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  std::vector<std::tuple<uint32_t, int64_t, int64_t>> key;
  for (size_t i = 0; i < n; ++i) key.emplace_back(t.track[i], t.ts[i], -t.dur[i]);
  std::stable_sort(want.begin(), want.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  t.Finalize();
  ASSERT_EQ(t.size(), n);
  for (size_t r = 0; r < n; ++r) {
    const size_t i = want[r];
    ASSERT_EQ(t.correlation[r], static_cast<int64_t>(i)) << r;
    EXPECT_EQ(t.str(t.name[r]), "s" + std::to_string(i));
    EXPECT_EQ(t.bytes[r], static_cast<int64_t>(i) * 3);
    EXPECT_EQ(t.external[r], static_cast<int64_t>(i) + 1);
    EXPECT_EQ(t.track[r], std::get<0>(key[i]));
    EXPECT_EQ(t.ts[r], std::get<1>(key[i]));
    EXPECT_EQ(t.dur[r], -std::get<2>(key[i]));
  }
  // Already in order: Finalize again changes nothing.
  std::vector<int64_t> before = t.correlation;
  t.Finalize();
  EXPECT_EQ(t.correlation, before);
}

TEST(TraceTest, OverlappingButNotNestedSlicesAreCounted) {
  Trace t;
  uint32_t a = t.ThreadTrack(1, 1);
  t.AddSlice(0, 100, t.Intern("x"), 0, a);
  t.AddSlice(50, 100, t.Intern("y"), 0, a);
  t.AddSlice(10, -5, t.Intern("z"), 0, a);
  t.Finalize();
  EXPECT_EQ(t.diagnostics.Get("improper_nesting"), 1u);
  EXPECT_EQ(t.diagnostics.Get("negative_duration"), 1u);
}

// Async ranges (by handle: concurrent coroutines on one event loop, NVTX domain ranges) may
// overlap without nesting; a range's parent is the innermost one that encloses it.
TEST(TraceTest, OverlappingAsyncRangesAreNotImproperNesting) {
  Trace t;
  uint32_t a = t.AddTrack({TrackType::kAsync, 1, 0, -1, -1, "async", "p"});
  t.AddSlice(0, 1000, t.Intern("outer"), 0, a);
  t.AddSlice(100, 300, t.Intern("call1"), 0, a);
  t.AddSlice(200, 300, t.Intern("call2"), 0, a);  // overlaps call1, inside outer
  t.AddSlice(250, 10, t.Intern("inner"), 0, a);   // inside call1 and call2: the newer one
  t.AddSlice(900, 200, t.Intern("past"), 0, a);   // overlaps outer's end: no parent
  t.Finalize();
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t.diagnostics.Get("improper_nesting"), 0u);
  auto row = [&](const char* name) {
    for (size_t i = 0; i < t.size(); ++i)
      if (t.str(t.name[i]) == name) return static_cast<int32_t>(i);
    return -1;
  };
  EXPECT_EQ(t.parent[row("call1")], row("outer"));
  EXPECT_EQ(t.parent[row("call2")], row("outer"));
  EXPECT_EQ(t.parent[row("inner")], row("call2"));
  EXPECT_EQ(t.parent[row("past")], -1);
  // The same slices on a thread's track are counted.
  Trace th;
  uint32_t b = th.ThreadTrack(1, 1);
  th.AddSlice(100, 300, th.Intern("call1"), 0, b);
  th.AddSlice(200, 300, th.Intern("call2"), 0, b);
  th.Finalize();
  EXPECT_EQ(th.diagnostics.Get("improper_nesting"), 1u);
}

TEST(TraceTest, StreamTracksAreKeyedByDeviceAndStream) {
  Trace t;
  uint32_t s = t.StreamTrack(0, 7);
  EXPECT_EQ(t.StreamTrack(0, 7), s);
  EXPECT_NE(t.StreamTrack(1, 7), s);
  EXPECT_EQ(t.tracks[s].type, TrackType::kDeviceStream);
}

}  // namespace
}  // namespace rlprof::analysis
