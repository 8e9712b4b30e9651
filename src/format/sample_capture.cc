#include "src/format/sample_capture.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "src/base/files.h"
#include "src/format/raw.h"

namespace rlprof::format {
namespace {

Event Ev(int64_t ts, int64_t payload, uint32_t name, uint16_t track, EventKind kind, Category cat,
         uint32_t arg0 = 0, uint32_t arg1 = 0) {
  Event e{};
  e.ts_ns = ts;
  e.payload = payload;
  e.name = name;
  e.track = track;
  e.kind = kind;
  e.category = cat;
  e.arg0 = arg0;
  e.arg1 = arg1;
  return e;
}

Event Counter(int64_t ts, uint32_t name, uint16_t track, double v) {
  Event e = Ev(ts, 0, name, track, EventKind::kCounter, Category::kMemory);
  e.set_counter_value(v);
  return e;
}

void SetStrings(Capture* c, const std::vector<std::string>& s) {
  c->raw.strings = s;
  c->raw.strings.insert(c->raw.strings.begin(), std::string());
}

}  // namespace

std::vector<std::string> HostileNames() {
  return {
      "quote\"d",
      "back\\slash\\",
      "new\nline\r\ttab",
      std::string("nul\0inside", 10),
      "ctl\x01\x02\x1f\x7f",
      "bad utf8 \xff\xfe end",
      "truncated \xe2\x82",
      "surrogate \xed\xa0\x80",
      "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80 \xe2\x80\xa8",
      "{\"json\": [1, 2]} </script>",
      std::string(70000, 'L') + "ong",
  };
}

std::vector<Capture> SampleCaptures() {
  std::vector<Capture> out(2);
  {
    Capture& c = out[0];
    Manifest& m = c.manifest;
    c.has_manifest = true;
    m.format = "rlprof-capture";
    m.format_version = 1;
    m.rlprof_version = "0.1.0";  // what this fixture says made it (not the build's version)
    m.run_id = "20261122-051500-golden";
    m.scope = "e2e";
    m.mode = "e2e";
    m.steps = {2};
    m.role = "actor";
    m.rank = 0;
    m.world_size = 2;
    m.host = "node-a";
    m.pid = 4100;
    m.roles = {"actor", "rollout"};
    m.monotonic_anchor_ns = 5'000'000'000;
    m.realtime_anchor_ns = 1'767'225'600'000'000'000;
    m.complete = true;
    c.raw.info = {0, 4100, "node-a"};
    SetStrings(&c, {"rl/step", "actor_update", "actor", "aten::mm", "[[8, 16], [16, 32]]",
                    "allreduce", "dp_group", "gpu_mem_allocated", "weight_sync",
                    "quote\" back\\ nl\n ctl\x01 bad\xff", "sm90_gemm_kernel", "decode",
                    "HtoD", "cudaLaunchKernel", "cudaStreamSynchronize"});
    c.raw.tracks = {{1, TrackKind::kThread, 4100, 4100, "main"},
                    {2, TrackKind::kThread, 4107, 4100, "data \"loader\""},
                    {3, TrackKind::kDeviceStream, (uint64_t{0} << 32) | 7, 4100, "stream 7"},
                    {4, TrackKind::kCounter, 0, 4100, "gpu_mem_allocated"},
                    {5, TrackKind::kAsync, 4100, 4100, "weight sync"}};
    const int64_t t0 = 5'000'100'000;
    c.raw.events = {
        Ev(t0, 900'000, 1, 1, EventKind::kComplete, Category::kStep, 2),
        Ev(t0 + 10'000, 600'000, 2, 1, EventKind::kComplete, Category::kStage, 0, 3),
        Ev(t0 + 20'000, 4'500, 14, 1, EventKind::kComplete, Category::kRuntime, 52),
        Ev(t0 + 30'250, 100'125, 4, 1, EventKind::kComplete, Category::kOperator, 17, 5),
        // Overhangs its parent (the stage ends at t0 + 610'000): clipped on export.
        Ev(t0 + 550'000, 100'000, 6, 1, EventKind::kComplete, Category::kCommunication,
           1 << 20, 7),
        Ev(t0 + 40'000, 120'125, 11, 3, EventKind::kComplete, Category::kKernel, 52),
        Ev(t0 + 35'000, 1'000, 13, 3, EventKind::kComplete, Category::kMemcpy, 4096, 13),
        Ev(t0 + 700'000, 2'000, 15, 2, EventKind::kComplete, Category::kSync),
        Ev(t0 + 15'000, 3, 12, 2, EventKind::kComplete, Category::kSubStep, 3),
        Ev(t0 + 650'000, 0, 10, 1, EventKind::kInstant, Category::kUser, 0, 0),
        Counter(t0 + 5'000, 8, 4, 1073741824.0),
        Counter(t0 + 605'000, 8, 4, 1610612736.5),
        Ev(t0 + 620'000, 77, 9, 5, EventKind::kBegin, Category::kUser),
        Ev(t0 + 880'000, 77, 0, 5, EventKind::kEnd, Category::kUser),
    };
    SortEventsByTime(&c.raw.events);
  }
  {
    Capture& c = out[1];
    Manifest& m = c.manifest;
    c.has_manifest = true;
    m.run_id = "20261122-051500-golden";
    m.scope = "e2e";
    m.role = "actor";
    m.rank = 1;
    m.world_size = 2;
    m.host = "node-b";
    m.pid = 4100;  // same pid as rank 0, other host: must become another process
    m.offset_to_rank0_ns = -2'000;
    c.raw.info = {1, 4100, "node-b"};
    SetStrings(&c, {"rl/step", "actor_update", "actor", "sm90_gemm_kernel"});
    c.raw.tracks = {{1, TrackKind::kThread, 4100, 4100, "main"},
                    {2, TrackKind::kDeviceStream, (uint64_t{1} << 32) | 7, 4100, ""}};
    const int64_t t0 = 5'000'101'000;
    c.raw.events = {
        Ev(t0, 899'000, 1, 1, EventKind::kComplete, Category::kStep, 2),
        Ev(t0 + 12'000, 590'000, 2, 1, EventKind::kComplete, Category::kStage, 0, 3),
        Ev(t0 + 42'000, 118'000, 4, 2, EventKind::kComplete, Category::kKernel, 9),
    };
    SortEventsByTime(&c.raw.events);
  }
  return out;
}

Capture SamplesCapture() {
  Capture c;
  c.has_manifest = true;
  c.manifest.rank = 0;
  c.manifest.host = "node-a";
  c.manifest.pid = 4200;
  c.manifest.role = "rollout";
  c.raw.info = {0, 4200, "node-a"};
  // 1 sample, 2 sample/decode, 3 sample/tokens, 4 A, 5 B, 6 C, 7 stop
  SetStrings(&c, {"sample", "sample/decode", "sample/tokens", "A", "B", "C", "stop"});
  c.raw.tracks = {{1, TrackKind::kAsync, 0, 4200, "samples"}};
  const int64_t t0 = 7'000'000'000;
  c.raw.events = {
      Ev(t0, 100'000, 1, 1, EventKind::kComplete, Category::kSample, 4, 0),
      Ev(t0 + 10'000, 90'000, 2, 1, EventKind::kComplete, Category::kSample, 4),
      Ev(t0 + 20'000, 200'000, 1, 1, EventKind::kComplete, Category::kSample, 5, 0),
      Ev(t0 + 30'000, 190'000, 2, 1, EventKind::kComplete, Category::kSample, 5),
      Ev(t0 + 150'000, 50'000, 1, 1, EventKind::kComplete, Category::kSample, 6, 0),
      Ev(t0 + 160'000, 40'000, 2, 1, EventKind::kComplete, Category::kSample, 6),
      Ev(t0 + 100'000, (int64_t{9} << 32) | 32, 3, 1, EventKind::kInstant, Category::kSample, 4, 0),
  };
  SortEventsByTime(&c.raw.events);
  return c;
}

Capture GeneratedCapture(size_t n) {
  Capture c;
  c.has_manifest = true;
  c.manifest.rank = 0;
  c.manifest.host = "bench";
  c.manifest.pid = 1;
  c.raw.info = {0, 1, "bench"};
  SetStrings(&c, {"rl/step", "actor_update", "aten::mm", "aten::add", "[[8, 16]]",
                  "ncclKernel", "allocated"});
  c.raw.tracks = {{1, TrackKind::kThread, 1, 1, "main"},
                  {2, TrackKind::kDeviceStream, 7, 1, "stream 7"},
                  {3, TrackKind::kCounter, 0, 1, "allocated"}};
  c.raw.events.reserve(n);
  int64_t t = 1'000'000;
  for (size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0:
        c.raw.events.push_back(
            Ev(t, 800, 3 + i % 2, 1, EventKind::kComplete, Category::kOperator, i, 5));
        break;
      case 1:
        c.raw.events.push_back(Ev(t, 1'500, 6, 2, EventKind::kComplete, Category::kKernel, i));
        break;
      case 2: c.raw.events.push_back(Counter(t, 7, 3, static_cast<double>(i) * 4096)); break;
      default:
        c.raw.events.push_back(Ev(t, 0, 1, 1, EventKind::kInstant, Category::kUser));
        break;
    }
    t += 1'000;
  }
  return c;
}

base::Status WriteSampleCaptureDir(const std::string& dir, const Capture& c) {
  RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
  // The sample's manifest as the runtime would write it for a closed stage capture.
  Manifest m = c.manifest;
  m.local_rank = m.rank;
  m.replica.reset();
  m.clock_source = "monotonic";
  m.tsc_hz = 0;
  m.window_open_ns = m.window_close_ns = 0;
  m.close_reason = "stage_end";
  m.contents = {"cpu"};
  m.event_count = static_cast<int64_t>(c.raw.events.size());
  m.threads = 1;
  m.files = {{"events.rlp", 0}};
  m.complete = true;
  m.errors.clear();
  const std::string text = ManifestToJson(m);
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/manifest.json", text));
  RLPROF_ASSIGN_OR_RETURN(auto w, RawWriter::Create(dir + "/events.rlp", c.raw.info, 4096));
  std::vector<StringEntry> strings;
  for (uint32_t i = 1; i < c.raw.strings.size(); ++i) strings.push_back({i, c.raw.strings[i]});
  RLPROF_RETURN_IF_ERROR(w->AddStrings(strings));
  RLPROF_RETURN_IF_ERROR(w->AddTracks(c.raw.tracks));
  RLPROF_RETURN_IF_ERROR(w->AddEvents(c.raw.events));
  return w->Close();
}

}  // namespace rlprof::format
