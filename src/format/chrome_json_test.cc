#include "src/format/chrome_json.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "src/base/files.h"
#include "src/base/golden_test_util.h"
#include "src/format/event_schema.h"
#include "src/format/json_escape.h"
#include "src/format/sample_capture.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

using json = nlohmann::json;

int64_t Ns(const json& micros) { return std::llround(micros.get<double>() * 1000.0); }

// One capture whose event names, track names and string args are all hostile.
Capture HostileCapture() {
  Capture c;
  c.manifest.rank = 3;
  c.manifest.host = "host\"\n\xff";
  c.manifest.pid = 77;
  c.manifest.role = "ro\\le";
  auto names = HostileNames();
  c.raw.strings.push_back("");
  for (auto& n : names) c.raw.strings.push_back(n);
  for (uint16_t i = 0; i < names.size(); ++i) {
    c.raw.tracks.push_back({static_cast<uint16_t>(i + 1), TrackKind::kThread,
                            static_cast<uint64_t>(100 + i), 77, names[i]});
  }
  int64_t t = 1'000'000'123;
  for (uint32_t i = 0; i < names.size(); ++i) {
    Event e{};
    e.ts_ns = t + i * 1'001;
    e.payload = 500 + i;
    e.name = i + 1;
    e.track = static_cast<uint16_t>(i + 1);
    e.kind = EventKind::kComplete;
    e.category = Category::kOperator;
    e.arg0 = i;
    e.arg1 = static_cast<uint32_t>(names.size() - i);  // shapes: another hostile string
    c.raw.events.push_back(e);
  }
  return c;
}

TEST(ChromeJsonTest, HostileNamesRoundTripThroughAStrictParser) {
  std::vector<Capture> caps = {HostileCapture()};
  StringSink sink;
  ExportStats stats = WriteChromeJson(caps, &sink);
  json doc = json::parse(sink.data, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  const Capture& c = caps[0];
  std::vector<json> slices;
  std::map<int64_t, std::string> thread_names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") slices.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], SanitizeUtf8(c.Label()));
    }
  }
  ASSERT_EQ(slices.size(), c.raw.events.size());
  EXPECT_EQ(stats.events, c.raw.events.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const Event& e = c.raw.events[i];
    const json& s = slices[i];
    EXPECT_EQ(s["name"], SanitizeUtf8(c.raw.str(e.name))) << i;
    EXPECT_EQ(s["cat"], "operator");
    EXPECT_EQ(s["pid"], 77);
    EXPECT_EQ(s["tid"], 100 + i);
    EXPECT_EQ(Ns(s["ts"]), e.ts_ns - c.raw.events[0].ts_ns) << i;
    EXPECT_EQ(Ns(s["dur"]), e.payload);
    EXPECT_EQ(s["args"]["seq"], e.arg0);
    EXPECT_EQ(s["args"]["shapes"], SanitizeUtf8(c.raw.str(e.arg1)));
    EXPECT_EQ(thread_names[100 + i], SanitizeUtf8(c.raw.tracks[i].name));
  }
}

TEST(ChromeJsonTest, MapsEveryEventKindOfTheSample) {
  auto caps = SampleCaptures();
  StringSink sink;
  ExportStats stats = WriteChromeJson(caps, &sink);
  json doc = json::parse(sink.data);
  std::map<std::string, int> phases;
  const json* clipped = nullptr;
  for (const auto& e : doc["traceEvents"]) {
    phases[e["ph"]]++;
    if (e["ph"] == "X" && e["name"] == "allreduce") clipped = &e;
    if (e["ph"] == "C") {
      EXPECT_EQ(e["name"], "gpu_mem_allocated");
    }
    if (e["ph"] == "f") {
      EXPECT_EQ(e["bp"], "e");
      EXPECT_EQ(e["id"], 52);
      EXPECT_EQ(e["tid"], 7);  // on the kernel's stream, at the kernel's start
      EXPECT_EQ(Ns(e["ts"]), 41'000);
    }
    if (e["ph"] == "e") {
      EXPECT_EQ(e["name"], "weight_sync");  // named after its begin
      EXPECT_EQ(e["id"], "0x4d");
    }
  }
  EXPECT_EQ(phases["X"], 12);
  EXPECT_EQ(phases["s"], 1);  // cudaLaunchKernel → sm90_gemm_kernel (correlation 52)
  EXPECT_EQ(phases["f"], 1);
  EXPECT_EQ(phases["i"], 1);
  EXPECT_EQ(phases["C"], 2);
  EXPECT_EQ(phases["b"], 1);
  EXPECT_EQ(phases["e"], 1);
  EXPECT_EQ(stats.events, 17u);
  // The allreduce overhangs the stage (ends at +610 µs): clipped to end with it.
  ASSERT_NE(clipped, nullptr);
  EXPECT_EQ(Ns((*clipped)["dur"]), 60'000);
  EXPECT_EQ(stats.clipped_slices, 1u);
  EXPECT_EQ((*clipped)["args"]["group"], "dp_group");
  EXPECT_EQ((*clipped)["args"]["bytes"], 1 << 20);
  // Rank 1 has the same pid on another host: a distinct process.
  std::set<int64_t> pids;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") pids.insert(e["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 4u);  // two hosts, two GPU processes
  EXPECT_EQ(doc["baseTimeNanoseconds"], 1'767'225'600'000'100'000 - 2'000 + 1'000);
}

TEST(ChromeJsonTest, MicrosecondsKeepEveryNanosecond) {
  std::string s;
  AppendMicros(&s, 0);
  s += ' ';
  AppendMicros(&s, 1);
  s += ' ';
  AppendMicros(&s, 123'456'789'012);
  s += ' ';
  AppendMicros(&s, -1'500);
  EXPECT_EQ(s, "0.000 0.001 123456789.012 -1.500");
}

TEST(ChromeJsonTest, GzipFileDecompressesToTheSameText) {
  auto caps = SampleCaptures();
  std::string dir = TestDir();
  auto plain = WriteChromeJsonFile(caps, dir + "/t.json");
  auto gz = WriteChromeJsonFile(caps, dir + "/t.json.gz");
  ASSERT_TRUE(plain.ok() && gz.ok());
  EXPECT_LT(gz->bytes, plain->bytes);
  auto text = base::ReadFile(dir + "/t.json");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(plain->bytes, text->size());
  gzFile f = gzopen((dir + "/t.json.gz").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string inflated;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) inflated.append(buf, n);
  gzclose(f);
  EXPECT_EQ(inflated, *text);
}

TEST(ChromeJsonTest, UnwritableOutputIsAnIoError) {
  auto caps = SampleCaptures();
  auto r = WriteChromeJsonFile(caps, "/nonexistent-dir/t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), base::StatusCode::kIoError);
}

// Golden: the sample captures exported to Chrome JSON must match the checked-in file.
// Regenerate after an intended change with:
//   RLPROF_UPDATE_GOLDEN=1 build/src/format/format_test --gtest_filter='*Golden*'
TEST(ChromeJsonGoldenTest, SampleCapturesMatchTheGoldenFile) {
  const std::string golden = std::string(RLPROF_SOURCE_DIR) + "/test/golden/format/sample_trace.json";
  StringSink sink;
  WriteChromeJson(SampleCaptures(), &sink);
  EXPECT_GOLDEN(golden, sink.data);
}


// Samples overlap on their track: each is a nestable async slice (b/e) whose id is its own, so
// nothing is clipped; the sample id is a string argument.
TEST(ChromeJsonTest, SamplesAreAsyncSlicesWithTheirOwnIds) {
  std::vector<Capture> caps{SamplesCapture()};
  StringSink sink;
  ExportStats stats = WriteChromeJson(caps, &sink);
  EXPECT_EQ(stats.clipped_slices, 0u);
  json doc = json::parse(sink.data);
  std::map<std::string, std::vector<std::string>> by_id;  // async id → "ph name"
  std::map<std::string, std::string> sample_of;           // async id → the sample's id arg
  for (const auto& e : doc["traceEvents"]) {
    if (e["cat"] != "sample" || e["ph"] == "i") continue;
    by_id[e["id"]].push_back(std::string(e["ph"]) + " " + std::string(e["name"]));
    if (e["ph"] == "b") sample_of[e["id"]] = e["args"]["id"];
  }
  ASSERT_EQ(by_id.size(), 3u);
  std::set<std::string> ids;
  for (const auto& [aid, evs] : by_id) {
    EXPECT_EQ(evs.size(), 4u);  // sample and its decode phase, b and e each
    ids.insert(sample_of[aid]);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"A", "B", "C"}));
}

}  // namespace
}  // namespace rlprof::format
