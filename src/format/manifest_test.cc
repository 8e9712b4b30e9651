// manifest.json: one struct, written by ManifestToJson (the runtime's writer uses it) and read
// back by ParseManifest (every reader): each field round-trips.
#include "src/format/manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace rlprof::format {
namespace {

Manifest Full() {
  Manifest m;
  m.rlprof_version = "9.8.7";
  m.run_id = "20261129-010203-abcdef";
  m.scope = "actor_update.part2";
  m.mode = "discrete";
  m.steps = {3, 4};
  m.stage = "actor_update";
  m.role = "actor";
  m.rank = 5;
  m.local_rank = 1;
  m.world_size = 8;
  m.host = "node7";
  m.pid = 4242;
  m.roles = {"actor", "rollout", "ref"};
  m.replica = 2;
  m.identity_source = "torchrun";
  m.clock_source = "tsc";
  m.tsc_hz = 2.5e9;
  m.monotonic_anchor_ns = 1000;
  m.realtime_anchor_ns = 1'795'000'000'000'000'000;
  m.offset_to_rank0_ns = -12;
  m.offset_measured = true;
  m.window_open_ns = 1100;
  m.window_close_ns = 9900;
  m.close_reason = "stage_end";
  m.trigger = "t0123abcd";
  m.sampling.unit = "micro_batch";
  m.sampling.first = 7;
  m.sampling.count = 2;
  m.sampling.complete = true;
  m.sampling.schedule_json = R"({"active":2,"wait":1})";
  m.sampling.from = "actor_rollout_ref.actor.profiler.tool_config.rlprof.schedule";
  m.contents = {"cpu", "ops"};
  m.ops_sampling = 0.1;
  m.event_count = 12345;
  m.dropped_buffer_full = 3;
  m.dropped_budget = 4;
  m.dropped_write_error = 5;
  m.dropped_events = 12;
  m.threads = 6;
  m.source_events = 77;
  m.sources_json = R"({"nvtx":{"ranges":3}})";
  m.complete = true;
  m.errors = {"a problem"};
  m.files = {{"events.rlp", 4096}};
  m.config_json = R"({"dialect":"verl-gen3","steps":[3,4]})";
  return m;
}

TEST(ManifestTest, EveryFieldRoundTrips) {
  const Manifest m = Full();
  const std::string text = ManifestToJson(m);
  std::vector<std::string> diag;
  const Manifest back = ParseManifest(text, &diag);
  EXPECT_TRUE(diag.empty()) << diag.front();
  EXPECT_EQ(back.format, kManifestFormat);
  EXPECT_EQ(back.format_version, kManifestFormatVersion);
  EXPECT_EQ(back.rlprof_version, m.rlprof_version);
  EXPECT_EQ(back.run_id, m.run_id);
  EXPECT_EQ(back.scope, m.scope);
  EXPECT_EQ(back.mode, m.mode);
  EXPECT_EQ(back.steps, m.steps);
  EXPECT_EQ(back.stage, m.stage);
  EXPECT_EQ(back.role, m.role);
  EXPECT_EQ(back.rank, m.rank);
  EXPECT_EQ(back.local_rank, m.local_rank);
  EXPECT_EQ(back.world_size, m.world_size);
  EXPECT_EQ(back.host, m.host);
  EXPECT_EQ(back.pid, m.pid);
  EXPECT_EQ(back.roles, m.roles);
  EXPECT_EQ(back.replica, m.replica);
  EXPECT_EQ(back.identity_source, m.identity_source);
  EXPECT_EQ(back.clock_source, m.clock_source);
  EXPECT_DOUBLE_EQ(back.tsc_hz, m.tsc_hz);
  EXPECT_EQ(back.monotonic_anchor_ns, m.monotonic_anchor_ns);
  EXPECT_EQ(back.realtime_anchor_ns, m.realtime_anchor_ns);
  EXPECT_EQ(back.offset_to_rank0_ns, m.offset_to_rank0_ns);
  EXPECT_EQ(back.offset_measured, m.offset_measured);
  EXPECT_EQ(back.window_open_ns, m.window_open_ns);
  EXPECT_EQ(back.window_close_ns, m.window_close_ns);
  EXPECT_EQ(back.close_reason, m.close_reason);
  EXPECT_EQ(back.trigger, m.trigger);
  EXPECT_EQ(back.sampling.unit, m.sampling.unit);
  EXPECT_EQ(back.sampling.first, m.sampling.first);
  EXPECT_EQ(back.sampling.count, m.sampling.count);
  EXPECT_EQ(back.sampling.complete, m.sampling.complete);
  EXPECT_EQ(nlohmann::json::parse(back.sampling.schedule_json),
            nlohmann::json::parse(m.sampling.schedule_json));
  EXPECT_EQ(back.sampling.from, m.sampling.from);
  EXPECT_EQ(back.contents, m.contents);
  EXPECT_DOUBLE_EQ(back.ops_sampling, 0.1);
  EXPECT_EQ(back.event_count, m.event_count);
  EXPECT_EQ(back.dropped_events, m.dropped_events);
  EXPECT_EQ(back.dropped_buffer_full, m.dropped_buffer_full);
  EXPECT_EQ(back.dropped_budget, m.dropped_budget);
  EXPECT_EQ(back.dropped_write_error, m.dropped_write_error);
  EXPECT_EQ(back.threads, m.threads);
  EXPECT_EQ(back.source_events, m.source_events);
  EXPECT_EQ(nlohmann::json::parse(back.sources_json), nlohmann::json::parse(m.sources_json));
  EXPECT_EQ(back.complete, m.complete);
  EXPECT_EQ(back.errors, m.errors);
  ASSERT_EQ(back.files.size(), 1u);
  EXPECT_EQ(back.files[0].name, "events.rlp");
  EXPECT_EQ(back.files[0].bytes, 4096);
  EXPECT_EQ(nlohmann::json::parse(back.config_json), nlohmann::json::parse(m.config_json));
  // And what is read is written again to the same text.
  EXPECT_EQ(ManifestToJson(back), text);
}

TEST(ManifestTest, APreformattedConfigIsSplicedInAsTheLastKey) {
  Manifest m = Full();
  const std::string formatted = FormatManifestConfig(m.config_json);
  EXPECT_EQ(ManifestToJson(m, formatted), ManifestToJson(m));
  m.config_json.clear();
  const std::string without = ManifestToJson(m);
  EXPECT_EQ(without.find("\"config\""), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(ManifestToJson(m, formatted));
  EXPECT_EQ(j["config"]["dialect"], "verl-gen3");
  EXPECT_EQ(FormatManifestConfig("not json"), "");
}

// The text is written directly (not through a JSON document): it must be the layout a JSON
// library gives the same document — parsing it and dumping it again with nlohmann (two-space
// indent, member order kept) gives the very same bytes — for full, empty and odd manifests.
TEST(ManifestTest, TheWrittenTextIsWhatAJsonLibraryDumpsOfTheSameDocument) {
  auto same_as_library = [](const std::string& text) {
    const auto doc = nlohmann::ordered_json::parse(text);
    EXPECT_EQ(doc.dump(2, ' ', false) + "\n", text);
  };
  Manifest full = Full();
  same_as_library(ManifestToJson(full));
  same_as_library(ManifestToJson(full, FormatManifestConfig(full.config_json)));
  Manifest empty;
  same_as_library(ManifestToJson(empty));  // empty lists ("[]"), no optional key
  Manifest odd = Full();
  odd.host = "h\"o\\s\tt\x01\n\xe2\x80\xa8";  // quotes, controls, U+2028
  odd.roles = {};
  odd.errors = {"disk \"full\"", ""};
  odd.files = {};
  odd.tsc_hz = 1e21;
  odd.ops_sampling = 0.1;
  odd.replica.reset();
  odd.sources_json = "{}";  // an empty object nested
  same_as_library(ManifestToJson(odd));
  // A nested text that is not an object is left out with its key, as before.
  odd.sources_json = "[1]";
  odd.sampling.schedule_json = "not json";
  const std::string text = ManifestToJson(odd);
  same_as_library(text);
  EXPECT_EQ(text.find("\"sources\""), std::string::npos);
  EXPECT_EQ(text.find("\"source_events\""), std::string::npos);
  EXPECT_EQ(text.find("\"schedule\""), std::string::npos);
  // Bytes that are not UTF-8 (a host name from a C API caller) still give valid JSON.
  odd.host = std::string("bad\xff\xfe", 5);
  std::vector<std::string> diag;
  EXPECT_EQ(ParseManifest(ManifestToJson(odd), &diag).host, "bad\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_TRUE(diag.empty());
}

TEST(ManifestTest, AnOpenWholeWindowCaptureHasNoCloseSamplingTriggerOrSources) {
  Manifest m;
  m.scope = "e2e";
  m.clock_source = "monotonic";
  const std::string text = ManifestToJson(m);
  for (const char* key : {"close_reason", "close_ns", "sampling", "trigger", "sources", "ops_sampling",
                          "source_events", "tsc_hz", "\"stage\"", "\"role\"", "config"})
    EXPECT_EQ(text.find(key), std::string::npos) << key;
  std::vector<std::string> diag;
  const Manifest back = ParseManifest(text, &diag);
  EXPECT_TRUE(diag.empty()) << diag.front();
  EXPECT_EQ(back.sampling.unit, "");
  EXPECT_EQ(back.close_reason, "");
  EXPECT_FALSE(back.replica.has_value());
  EXPECT_EQ(back.ops_sampling, 1.0);
}

TEST(ManifestTest, NamesThatAreNotUtf8AreReplacedNotThrown) {
  Manifest m;
  m.host = std::string("bad\xff\xfe", 5);
  m.roles = {std::string("r\xc3", 2)};
  std::string text;
  EXPECT_NO_THROW(text = ManifestToJson(m));
  std::vector<std::string> diag;
  const Manifest back = ParseManifest(text, &diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(back.host.substr(0, 3), "bad");
}

TEST(ManifestTest, IllTypedKeysKeepDefaultsAndAreNoted) {
  std::vector<std::string> diag;
  const Manifest m = ParseManifest(
      R"({"identity": {"rank": "x"}, "window": {"sampling": {"schedule": 3}}, "counts": {"events": 1},
          "sources": [], "ops_sampling": 0})",
      &diag);
  EXPECT_EQ(m.rank, -1);
  EXPECT_EQ(m.sampling.schedule_json, "");
  EXPECT_EQ(m.sources_json, "");
  EXPECT_EQ(m.ops_sampling, 1.0);  // a share of 0 would scale the operators by infinity
  ASSERT_EQ(diag.size(), 4u);
  EXPECT_NE(diag[0].find("identity.rank: expected an integer"), std::string::npos) << diag[0];
}

}  // namespace
}  // namespace rlprof::format
