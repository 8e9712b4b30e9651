#include "src/analysis/trace.h"

#include <gtest/gtest.h>

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

TEST(TraceTest, StreamTracksAreKeyedByDeviceAndStream) {
  Trace t;
  uint32_t s = t.StreamTrack(0, 7);
  EXPECT_EQ(t.StreamTrack(0, 7), s);
  EXPECT_NE(t.StreamTrack(1, 7), s);
  EXPECT_EQ(t.tracks[s].type, TrackType::kDeviceStream);
}

}  // namespace
}  // namespace rlprof::analysis
