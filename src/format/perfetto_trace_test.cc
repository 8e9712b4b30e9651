#include "src/format/perfetto_trace.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <map>
#include <optional>

#include "src/format/chrome_json.h"
#include "src/format/json_escape.h"
#include "src/format/perfetto_packets.h"
#include "src/format/proto_writer.h"
#include "src/format/sample_capture.h"
#include "src/format/sqlite_export.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

// ---- An independent protobuf wire decoder (shares no code with the writer) ----
struct Field {
  uint32_t num = 0;
  uint32_t wire = 0;
  uint64_t v = 0;          // varint / fixed64
  std::string_view bytes;  // length-delimited
};

bool ReadVarint(std::string_view b, size_t* p, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= b.size()) return false;
    auto c = static_cast<uint8_t>(b[(*p)++]);
    *v |= uint64_t{c & 0x7Fu} << shift;
    if ((c & 0x80) == 0) return true;
  }
  return false;
}

std::optional<std::vector<Field>> Decode(std::string_view b) {
  std::vector<Field> out;
  size_t p = 0;
  while (p < b.size()) {
    uint64_t tag;
    if (!ReadVarint(b, &p, &tag)) return std::nullopt;
    Field f;
    f.num = static_cast<uint32_t>(tag >> 3);
    f.wire = tag & 7;
    if (f.wire == 0) {
      if (!ReadVarint(b, &p, &f.v)) return std::nullopt;
    } else if (f.wire == 1) {
      if (b.size() - p < 8) return std::nullopt;
      std::memcpy(&f.v, b.data() + p, 8);
      p += 8;
    } else if (f.wire == 2) {
      uint64_t len;
      if (!ReadVarint(b, &p, &len) || b.size() - p < len) return std::nullopt;
      f.bytes = b.substr(p, len);
      p += len;
    } else {
      return std::nullopt;
    }
    out.push_back(f);
  }
  return out;
}

const Field* Get(const std::vector<Field>& m, uint32_t num) {
  for (const auto& f : m) {
    if (f.num == num) return &f;
  }
  return nullptr;
}

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// ---- The decoded trace model ----
struct Track {
  std::string name;
  uint64_t parent = 0;
  int64_t pid = 0, tid = 0;
  bool counter = false, process = false, thread = false;
};
struct TEvent {
  uint32_t seq = 0;
  uint64_t ts = 0;
  uint64_t type = 0;
  uint64_t track = 0;
  std::string name;
  std::string category;
  std::map<std::string, std::string> args;
  uint64_t flow = 0, terminating_flow = 0;
  std::optional<int64_t> counter_int;
  std::optional<double> counter_double;
};
struct Model {
  std::map<uint64_t, Track> tracks;
  std::vector<TEvent> events;
  std::vector<std::string> errors;
  int clock_snapshots = 0;
};

Model DecodeTrace(std::string_view bytes) {
  Model m;
  auto packets = Decode(bytes);
  if (!packets) {
    m.errors.push_back("trace is not valid protobuf");
    return m;
  }
  std::map<uint32_t, std::map<uint64_t, std::string>> names, cats, arg_names;  // per sequence
  std::map<uint32_t, uint64_t> last_ts;
  for (const Field& pf : *packets) {
    if (pf.num != 1 || pf.wire != 2) {
      m.errors.push_back("top-level field is not Trace.packet");
      continue;
    }
    auto p = Decode(pf.bytes);
    if (!p) {
      m.errors.push_back("bad packet");
      continue;
    }
    const Field* seqf = Get(*p, 10);
    if (seqf == nullptr || seqf->v == 0) m.errors.push_back("packet without sequence id");
    uint32_t seq = seqf ? static_cast<uint32_t>(seqf->v) : 0;
    const Field* flags = Get(*p, 13);
    if (flags && (flags->v & 1)) names[seq].clear(), cats[seq].clear(), arg_names[seq].clear();
    if (const Field* id = Get(*p, 12)) {
      auto entries = Decode(id->bytes);
      for (const Field& e : *entries) {
        auto entry = *Decode(e.bytes);
        auto& table = e.num == 1 ? cats[seq] : e.num == 2 ? names[seq] : arg_names[seq];
        table[Get(entry, 1)->v] = std::string(Get(entry, 2)->bytes);
      }
    }
    if (Get(*p, 6)) ++m.clock_snapshots;
    if (const Field* td = Get(*p, 60)) {
      auto d = *Decode(td->bytes);
      Track t;
      uint64_t uuid = Get(d, 1)->v;
      if (auto* f = Get(d, 5)) t.parent = f->v;
      if (auto* f = Get(d, 2)) t.name = std::string(f->bytes);
      if (Get(d, 8)) t.counter = true;
      if (auto* f = Get(d, 3)) {
        auto pd = *Decode(f->bytes);
        t.process = true;
        t.pid = static_cast<int64_t>(Get(pd, 1)->v);
        t.name = std::string(Get(pd, 6)->bytes);
      }
      if (auto* f = Get(d, 4)) {
        auto th = *Decode(f->bytes);
        t.thread = true;
        t.pid = static_cast<int32_t>(Get(th, 1)->v);
        t.tid = static_cast<int32_t>(Get(th, 2)->v);
        t.name = std::string(Get(th, 5)->bytes);
      }
      if (t.parent != 0 && !m.tracks.count(t.parent)) m.errors.push_back("parent not yet described");
      m.tracks[uuid] = t;
    }
    if (const Field* tef = Get(*p, 11)) {
      auto te = *Decode(tef->bytes);
      TEvent e;
      e.seq = seq;
      e.ts = Get(*p, 8)->v;
      if (e.ts < last_ts[seq]) m.errors.push_back("timestamps go backwards on a sequence");
      last_ts[seq] = e.ts;
      if (!flags || !(flags->v & 2)) m.errors.push_back("event without NEEDS_INCREMENTAL_STATE");
      e.type = Get(te, 9)->v;
      e.track = Get(te, 11)->v;
      if (!m.tracks.count(e.track)) m.errors.push_back("event on an undescribed track");
      if (auto* f = Get(te, 23)) e.name = std::string(f->bytes);
      if (auto* f = Get(te, 10)) {
        if (!names[seq].count(f->v)) m.errors.push_back("name iid used before definition");
        e.name = names[seq][f->v];
      }
      if (auto* f = Get(te, 3)) e.category = cats[seq][f->v];
      for (const Field& f : te) {
        if (f.num != 4) continue;
        auto da = *Decode(f.bytes);
        std::string key = arg_names[seq][Get(da, 1)->v];
        if (auto* s = Get(da, 6)) e.args[key] = std::string(s->bytes);
        if (auto* u = Get(da, 3)) e.args[key] = std::to_string(u->v);
      }
      if (auto* f = Get(te, 47)) e.flow = f->v;
      if (auto* f = Get(te, 48)) e.terminating_flow = f->v;
      if (auto* f = Get(te, 30)) e.counter_int = static_cast<int64_t>(f->v);
      if (auto* f = Get(te, 44)) {
        double d;
        std::memcpy(&d, &f->v, 8);
        e.counter_double = d;
      }
      m.events.push_back(e);
    }
  }
  return m;
}

// Checks begin/end discipline per track; returns begin index → end timestamp.
std::map<size_t, uint64_t> MatchSlices(const Model& m, std::vector<std::string>* errors) {
  std::map<uint64_t, std::vector<size_t>> open;
  std::map<size_t, uint64_t> end_of;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const TEvent& e = m.events[i];
    if (e.type == 1) open[e.track].push_back(i);
    if (e.type == 2) {
      if (open[e.track].empty()) {
        errors->push_back("SLICE_END without open slice");
        continue;
      }
      end_of[open[e.track].back()] = e.ts;
      open[e.track].pop_back();
    }
  }
  return end_of;
}

// ---- Tests ----

TEST(ProtoWriterTest, EncodesVarintsAndNestedLengths) {
  ProtoWriter w;
  w.Varint(1, 300);
  size_t n = w.BeginNested(2);
  w.Bytes(3, std::string(200, 'x'));  // inner length needs two bytes
  w.EndNested(n);
  w.Int(4, -1);
  w.Double(5, 1.5);
  auto fields = Decode(w.data());
  ASSERT_TRUE(fields.has_value());
  ASSERT_EQ(fields->size(), 4u);
  EXPECT_EQ((*fields)[0].v, 300u);
  EXPECT_EQ(Hex(w.data().substr(0, 3)), "08 ac 02");
  EXPECT_EQ(Decode((*fields)[1].bytes)->at(0).bytes.size(), 200u);
  EXPECT_EQ((*fields)[2].v, ~uint64_t{0});  // int64 -1: ten bytes
  double d;
  std::memcpy(&d, &(*fields)[3].v, 8);
  EXPECT_EQ(d, 1.5);
}

TrackEventPacket Packet(uint64_t ts, TrackEventType type, uint64_t track) {
  TrackEventPacket p;
  p.ts = ts;
  p.type = type;
  p.track_uuid = track;
  return p;
}

TEST(PerfettoPacketsTest, ReproducesTheWorkedEncodingByteForByte) {
  std::string out;
  PerfettoPacketWriter p(1, &out);
  p.ProcessTrack(1, 1234, "rank0");
  EXPECT_EQ(Hex(out), "0a 13 e2 03 0e 08 01 1a 0a 08 d2 09 32 05 72 61 6e 6b 30 50 01");
  out.clear();
  p.ThreadTrack(2, 1, 1234, 1234, "main");
  EXPECT_EQ(Hex(out), "0a 17 e2 03 12 08 02 28 01 22 0c 08 d2 09 10 d2 09 2a 04 6d 61 69 6e 50 01");
  out.clear();
  TrackEventPacket begin = Packet(1000, TrackEventType::kSliceBegin, 2);
  begin.name = "rl/step";
  p.Event(begin);
  EXPECT_EQ(Hex(out), "0a 15 40 e8 07 5a 0e 48 01 58 02 ba 01 07 72 6c 2f 73 74 65 70 50 01");
  out.clear();
  p.Event(Packet(5000, TrackEventType::kSliceEnd, 2));
  EXPECT_EQ(Hex(out), "0a 0b 40 88 27 5a 04 48 02 58 02 50 01");
  out.clear();
  InternedString step{1, "rl/step"};
  TrackEventPacket interned = Packet(1000, TrackEventType::kSliceBegin, 2);
  interned.name_iid = 1;
  interned.new_names = {&step, 1};
  interned.sequence_flags = kSeqIncrementalStateCleared | kSeqNeedsIncrementalState;
  p.Event(interned);
  EXPECT_EQ(Hex(out),
            "0a 1e 40 e8 07 62 0d 12 0b 08 01 12 07 72 6c 2f 73 74 65 70 5a 06 48 01 58 02 50 "
            "01 50 01 68 03");
  out.clear();
  p.NamedTrack(3, 1, "queue depth", /*counter=*/true);
  EXPECT_EQ(Hex(out),
            "0a 18 e2 03 13 08 03 28 01 12 0b 71 75 65 75 65 20 64 65 70 74 68 42 00 50 01");
  out.clear();
  TrackEventPacket counter = Packet(1500, TrackEventType::kCounter, 3);
  counter.counter_int = 7;
  p.Event(counter);
  EXPECT_EQ(Hex(out), "0a 0e 40 dc 0b 5a 07 48 04 58 03 f0 01 07 50 01");
}

TEST(PerfettoTraceTest, SampleDecodesToTheSameSlicesCountersAndAsyncRanges) {
  auto caps = SampleCaptures();
  StringSink sink;
  ExportStats stats = WritePerfetto(caps, &sink);
  Model m = DecodeTrace(sink.data);
  EXPECT_TRUE(m.errors.empty()) << m.errors.front();
  std::vector<std::string> errors;
  auto ends = MatchSlices(m, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  std::map<uint64_t, int> by_type;
  for (const auto& e : m.events) by_type[e.type]++;
  EXPECT_EQ(by_type[1], 13);  // 12 complete + 1 async begin
  EXPECT_EQ(by_type[2], 13);
  EXPECT_EQ(by_type[3], 1);
  EXPECT_EQ(by_type[4], 2);
  EXPECT_EQ(stats.events, 12u + 1 + 1 + 1 + 2);  // complete, async b/e, instant, counters
  EXPECT_EQ(stats.clipped_slices, 1u);
  EXPECT_EQ(m.clock_snapshots, 1);  // rank 0 has anchors, rank 1 none
  const int64_t t0 = 5'000'100'000;
  bool saw_clipped = false, saw_async = false;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const TEvent& e = m.events[i];
    if (e.type == 1 && e.name == "allreduce") {
      saw_clipped = true;
      EXPECT_EQ(e.ts, static_cast<uint64_t>(t0 + 550'000));
      EXPECT_EQ(ends[i], static_cast<uint64_t>(t0 + 610'000));  // clipped to its parent
      EXPECT_EQ(e.category, "communication");
      EXPECT_EQ(e.args.at("group"), "dp_group");
      EXPECT_EQ(e.args.at("bytes"), std::to_string(1 << 20));
    }
    if (e.type == 1 && e.name == "weight_sync") {
      saw_async = true;
      EXPECT_EQ(ends[i], static_cast<uint64_t>(t0 + 880'000));
      EXPECT_EQ(m.tracks[e.track].name, "weight sync");
    }
    if (e.type == 1 && e.name == "sm90_gemm_kernel" && e.seq == 1) {
      const Track& t = m.tracks[e.track];
      EXPECT_EQ(t.tid, 7);
      EXPECT_EQ(m.tracks[t.parent].name, "rank 0 GPU 0");
    }
    if (e.type == 4) {
      EXPECT_EQ(m.tracks[e.track].name, "gpu_mem_allocated");
      EXPECT_TRUE(m.tracks[e.track].counter);
      if (e.counter_int) EXPECT_EQ(*e.counter_int, 1073741824);
      else EXPECT_EQ(*e.counter_double, 1610612736.5);
    }
    if (e.seq == 2 && e.type == 1 && e.name == "rl/step") {
      EXPECT_EQ(e.ts, static_cast<uint64_t>(5'000'101'000 - 2'000));  // aligned to rank 0
      EXPECT_EQ(m.tracks[m.tracks[e.track].parent].name, "rank 1 [actor] node-b (pid 4100)");
    }
  }
  EXPECT_TRUE(saw_clipped);
  EXPECT_TRUE(saw_async);
  // The launch (cudaLaunchKernel, correlation 52) and its kernel share one flow id.
  uint64_t source = 0, target = 0;
  for (const auto& e : m.events) {
    if (e.name == "cudaLaunchKernel") source = e.flow;
    if (e.name == "sm90_gemm_kernel" && e.seq == 1) target = e.terminating_flow;
    if (e.name == "sm90_gemm_kernel" && e.seq == 2) {
      EXPECT_EQ(e.terminating_flow, 0u);  // rank 1 has no launch for its kernel
    }
  }
  EXPECT_NE(source, 0u);
  EXPECT_EQ(source, target);
}

TEST(PerfettoTraceTest, HostileNamesRoundTripAsValidUtf8) {
  Capture c;
  c.manifest.rank = 0;
  c.manifest.pid = 50;
  auto names = HostileNames();
  c.raw.strings.push_back("");
  for (auto& n : names) c.raw.strings.push_back(n);
  for (uint16_t i = 0; i < names.size(); ++i) {
    c.raw.tracks.push_back({static_cast<uint16_t>(i + 1), TrackKind::kThread, 100u + i, 50, names[i]});
    Event e{};
    e.ts_ns = 1000 + i * 10;
    e.payload = 5;
    e.name = i + 1;
    e.track = i + 1;
    e.kind = EventKind::kComplete;
    e.category = Category::kOperator;
    e.arg0 = i;
    e.arg1 = static_cast<uint32_t>(names.size() - i);
    c.raw.events.push_back(e);
  }
  std::vector<Capture> caps = {c};
  StringSink sink;
  WritePerfetto(caps, &sink);
  Model m = DecodeTrace(sink.data);
  ASSERT_TRUE(m.errors.empty()) << m.errors.front();
  std::vector<std::string> errors;
  auto ends = MatchSlices(m, &errors);
  ASSERT_TRUE(errors.empty());
  size_t k = 0;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const TEvent& e = m.events[i];
    if (e.type != 1) continue;
    ASSERT_LT(k, names.size());
    EXPECT_EQ(e.name, SanitizeUtf8(names[k])) << k;
    EXPECT_TRUE(IsValidUtf8(e.name));
    EXPECT_EQ(e.ts, 1000u + k * 10);
    EXPECT_EQ(ends[i], 1005u + k * 10);
    EXPECT_EQ(m.tracks[e.track].name, SanitizeUtf8(names[k]));
    EXPECT_EQ(m.tracks[e.track].tid, static_cast<int64_t>(100 + k));
    EXPECT_EQ(e.args.at("seq"), std::to_string(k));
    EXPECT_EQ(e.args.at("shapes"), SanitizeUtf8(names[names.size() - 1 - k]));
    ++k;
  }
  EXPECT_EQ(k, names.size());
}

TEST(PerfettoTraceTest, FileStartsWithATracePacket) {
  auto caps = SampleCaptures();
  std::string path = TestDir() + "/t.pftrace";
  auto stats = WritePerfettoFile(caps, path);
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->bytes, 100u);
  EXPECT_FALSE(WritePerfettoFile(caps, "/nonexistent-dir/t.pftrace").ok());
}

// Issue 10: the writers take captures built in memory too (not through LoadCapture's time
// checks). Times and offsets at the edges of int64 must not overflow (the asan preset's UBSan
// aborts on signed overflow); what cannot be written is counted.
TEST(PerfettoTraceTest, WritersTakeHostileTimesWithoutOverflow) {
  std::vector<Capture> caps = SampleCaptures();
  caps[0].manifest.offset_to_rank0_ns = INT64_MAX;
  caps[0].manifest.monotonic_anchor_ns = INT64_MAX;
  caps[0].manifest.realtime_anchor_ns = INT64_MIN;
  caps[1].manifest.offset_to_rank0_ns = INT64_MIN;
  caps[0].raw.events[0].ts_ns = INT64_MAX;
  caps[0].raw.events[0].payload = INT64_MAX;
  caps[1].raw.events[0].ts_ns = INT64_MIN;
  caps[1].raw.events[0].payload = INT64_MAX;
  StringSink proto, json;
  ExportStats p = WritePerfetto(caps, &proto);
  ExportStats j = WriteChromeJson(caps, &json);
  EXPECT_GT(p.events, 0u);
  EXPECT_GT(j.events, 0u);
  EXPECT_GT(p.diagnostics.Get("export_skipped_events"), 0u);  // times before the trace start
  auto db = WriteSqliteFile(caps, TestDir() + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  // Loaded captures are checked once, in LoadCapture: the same values are counted there.
  Capture c = caps[0];
  SanitizeCaptureTimes(&c);
  EXPECT_EQ(c.diagnostics.Get("clock_offset_out_of_range"), 3u);  // offset and both anchors
  EXPECT_EQ(c.diagnostics.Get("time_out_of_range"), 1u);
}


// Samples overlap on their track: each gets a lane of the "samples" tracks, its phase nests in
// it on the same lane, nothing is clipped, and the id is a string argument.
TEST(PerfettoTraceTest, OverlappingSamplesGetLanesAndTheirPhasesNest) {
  std::vector<Capture> caps{SamplesCapture()};
  StringSink sink;
  ExportStats stats = WritePerfetto(caps, &sink);
  Model m = DecodeTrace(sink.data);
  ASSERT_TRUE(m.errors.empty()) << m.errors.front();
  std::vector<std::string> errors;
  auto ends = MatchSlices(m, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(stats.clipped_slices, 0u);
  std::map<std::string, uint64_t> sample_track, decode_track;
  for (size_t i = 0; i < m.events.size(); ++i) {
    const TEvent& e = m.events[i];
    if (e.type != 1) continue;
    const std::string id = e.args.at("id");
    EXPECT_EQ(m.tracks[e.track].name, "samples");
    (e.name == "sample" ? sample_track : decode_track)[id] = e.track;
    if (e.name == "sample" && id == "B") EXPECT_EQ(ends[i] - e.ts, 200'000u);
  }
  ASSERT_EQ(sample_track.size(), 3u);
  EXPECT_NE(sample_track["A"], sample_track["B"]);  // overlapping: two lanes
  EXPECT_EQ(sample_track["C"], sample_track["A"]);  // A has ended: its lane again
  EXPECT_EQ(decode_track, sample_track);            // each phase on its sample's lane
}

}  // namespace
}  // namespace rlprof::format
