// The NVTX injection library end to end: nvtx_plain_program (plain NVTX3 calls, no rlprof) run
// with NVTX_INJECTION64_PATH = librlprof_nvtx.so and an rlprof config → a capture whose ranges,
// marks, domain tracks, stages and steps are those of the program, shown by `rlprof summary`
// and `rlprof export`; a process with its own rlprof session attaches its runtime instead.
#include <nvtx3/nvToolsExt.h>  // the attach test calls NVTX as an application does
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rlprof/rlprof.h"
#include "src/format/raw.h"

namespace rlprof::sources {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string FreshDir(const std::string& tag) {
  std::string d = ::testing::TempDir() + "rlprof-nvtx-" + std::to_string(getpid()) + "-" + tag;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// `s` single-quoted for sh (paths under a clone may hold spaces and any other character).
std::string Q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string WriteConfig(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/profile.yaml";
  std::ofstream(path) << "rlprof:\n  save_path: " << dir << "/out\n" << body;
  return path;
}

// Runs the plain program under the injection library; returns its output.
std::string RunPlain(const std::string& config, int steps, int* rc,
                     const std::string& extra_env = "") {
  std::string env = "NVTX_INJECTION64_PATH=" + Q(RLPROF_NVTX_LIBRARY) + " RLPROF_ROLES=actor RLPROF_RUN_ID=nvtx ";
  if (!config.empty()) env += "RLPROF_CONFIG=" + Q(config) + " ";
  return Shell("env -u RLPROF_OVERRIDES " + env + extra_env + " " + Q(RLPROF_NVTX_PROGRAM) + " " +
                   std::to_string(steps),
               rc);
}

std::vector<std::string> Captures(const std::string& root) {
  std::vector<std::string> out;
  if (!fs::exists(root)) return out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename() == "manifest.json") out.push_back(e.path().parent_path().string());
  std::sort(out.begin(), out.end());
  return out;
}

json Manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return json::parse(in, nullptr, false);
}

struct Seen {
  std::multiset<std::string> ranges, marks, async_begins, stages, steps;
  std::map<std::string, std::string> range_track;  // range name → its track's name
  std::set<std::string> thread_names;
};

Seen Read(const std::string& dir) {
  Seen s;
  auto cap = format::ReadRaw(dir + "/events.rlp");
  EXPECT_TRUE(cap.ok()) << dir;
  if (!cap.ok()) return s;
  std::map<uint16_t, const format::TrackEntry*> tracks;
  for (const auto& t : cap->tracks) {
    tracks[t.id] = &t;
    if (t.kind == format::TrackKind::kThread) s.thread_names.insert(t.name);
  }
  for (const auto& e : cap->events) {
    const std::string name = cap->str(e.name);
    switch (e.category) {
      case format::Category::kStage: s.stages.insert(name); break;
      case format::Category::kStep: s.steps.insert(name); break;
      case format::Category::kUser:
        if (e.kind == format::EventKind::kComplete) {
          s.ranges.insert(name);
          s.range_track[name] = tracks.count(e.track) ? tracks[e.track]->name : "?";
        } else if (e.kind == format::EventKind::kInstant) {
          s.marks.insert(name);
        } else if (e.kind == format::EventKind::kBegin) {
          s.async_begins.insert(name);
          s.range_track[name] = tracks.count(e.track) ? tracks[e.track]->name : "?";
        }
        break;
      default: break;
    }
  }
  return s;
}

TEST(NvtxInjectionTest, APlainNvtxProgramIsCapturedInTheWindowsTheConfigSelects) {
  const std::string dir = FreshDir("e2e");
  const std::string cfg = WriteConfig(dir, "  steps: [2]\n  roles:\n    actor: {ranks: [0], contents: [cpu]}\n");
  int rc = 0;
  const std::string out = RunPlain(cfg, 3, &rc);
  ASSERT_EQ(rc, 0) << out;
  auto caps = Captures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u) << out;
  EXPECT_NE(caps[0].find("/step2/e2e/"), std::string::npos) << caps[0];
  const Seen s = Read(caps[0]);
  // Step 2 only: the outermost "step" range became RL steps 1..3, of which step 2 is captured.
  EXPECT_EQ(s.steps, (std::multiset<std::string>{"step 2"}));
  // rollout_generate (a vocabulary name) and update_actor (verl's alias) became stages.
  EXPECT_EQ(s.stages, (std::multiset<std::string>{"actor_update", "rollout_generate"}));
  EXPECT_EQ(s.ranges.count("execute_model"), 4u);  // registered string, domain "vllm"
  EXPECT_EQ(s.ranges.count("forward_backward_pass"), 1u);
  EXPECT_EQ(s.ranges.count("optimizer_step \u03b8"), 1u);  // wide string, as UTF-8
  EXPECT_EQ(s.marks.count("loss ready"), 1u);
  EXPECT_EQ(s.async_begins.count("weight_sync_wait"), 1u);
  // Domains map to tracks (a lane per thread, named after the domain); the default domain's
  // push/pop stay on the thread (named by nvtxNameOsThread), its start/end go to "NVTX".
  EXPECT_EQ(s.range_track.at("execute_model"), "vllm");
  EXPECT_EQ(s.range_track.at("forward_backward_pass"), "trainer main");
  EXPECT_EQ(s.range_track.at("weight_sync_wait"), "NVTX");
  EXPECT_EQ(s.ranges.count("step"), 0u) << "steps and stages are not also plain ranges";

  const json m = Manifest(caps[0]);
  ASSERT_TRUE(m["sources"].contains("nvtx")) << m.dump();
  const json& n = m["sources"]["nvtx"];
  EXPECT_EQ(n["standalone"], 1);
  EXPECT_EQ(n["domains"], 1);
  EXPECT_EQ(n["registered_strings"], 1);
  EXPECT_EQ(n["named_categories"], 1);
  EXPECT_EQ(n["unmatched_pops"], 0);
  EXPECT_GE(n["ranges"].get<int64_t>(), 7);

  // What users look at: `rlprof summary` shows the stages (--view rl) and the ranges
  // (--view ranges), the Perfetto export both.
  const std::string stages = Shell(Q(RLPROF_CLI) + " summary --view all " + Q(caps[0]), &rc);
  ASSERT_EQ(rc, 0) << stages;
  EXPECT_NE(stages.find("rollout_generate"), std::string::npos) << stages;
  EXPECT_NE(stages.find("actor_update"), std::string::npos);
  const std::string ranges = Shell(Q(RLPROF_CLI) + " summary --view ranges --json " + Q(caps[0]), &rc);
  ASSERT_EQ(rc, 0) << ranges;
  const json rj = json::parse(ranges, nullptr, false);
  ASSERT_FALSE(rj.is_discarded()) << ranges;
  const json& table = rj["inputs"][0]["tables"]["user_ranges"];
  std::map<std::string, int> col;
  for (size_t i = 0; i < table["columns"].size(); ++i) col[table["columns"][i]["name"]] = static_cast<int>(i);
  std::map<std::string, std::pair<std::string, int64_t>> rows;  // name → (track, count)
  for (const auto& r : table["rows"])
    rows[r[col["name"]].get<std::string>()] = {r[col["track"]].get<std::string>(), r[col["count"]].get<int64_t>()};
  EXPECT_EQ(rows["execute_model"], (std::pair<std::string, int64_t>{"vllm", 4})) << ranges;
  EXPECT_EQ(rows["forward_backward_pass"], (std::pair<std::string, int64_t>{"", 1}));
  EXPECT_EQ(rows["weight_sync_wait"], (std::pair<std::string, int64_t>{"NVTX", 1}));
  EXPECT_EQ(rows["loss ready"].second, 1);
  const std::string trace = dir + "/trace.pftrace";
  const std::string ex = Shell(Q(RLPROF_CLI) + " export " + Q(caps[0]) + " -o " + Q(trace), &rc);
  ASSERT_EQ(rc, 0) << ex;
  std::ifstream in(trace, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* want : {"execute_model", "forward_backward_pass", "loss ready", "vllm",
                           "weight_sync_wait", "rollout_generate"})
    EXPECT_NE(bytes.find(want), std::string::npos) << want;
}

TEST(NvtxInjectionTest, DiscreteModeOpensAWindowPerNvtxStage) {
  const std::string dir = FreshDir("discrete");
  const std::string cfg = WriteConfig(
      dir, "  steps: [1]\n  roles:\n    actor:\n      ranks: [0]\n      discrete: true\n"
           "      stages: [actor_update]\n      contents: [cpu]\n");
  int rc = 0;
  const std::string out = RunPlain(cfg, 2, &rc);
  ASSERT_EQ(rc, 0) << out;
  auto caps = Captures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u) << out;
  EXPECT_NE(caps[0].find("/step1/actor_update/"), std::string::npos) << caps[0];
  const Seen s = Read(caps[0]);
  EXPECT_EQ(s.ranges.count("forward_backward_pass"), 1u);
  EXPECT_EQ(s.ranges.count("execute_model"), 0u) << "rollout_generate is outside the window";
}

TEST(NvtxInjectionTest, WithoutAConfigTheProgramRunsUnprofiled) {
  const std::string dir = FreshDir("off");
  int rc = 0;
  const std::string out = RunPlain("", 2, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(out.empty()) << out;
  const std::string bad = RunPlain(dir + "/missing.yaml", 2, &rc);
  EXPECT_EQ(rc, 0) << "a bad config never stops the program";
  EXPECT_NE(bad.find("rlprof: NVTX injection: no capture"), std::string::npos) << bad;
}

TEST(NvtxInjectionTest, AProcessWithItsOwnSessionRecordsNvtxIntoIt) {
  // This test process links librlprof.so, and so does the injection library NVTX loads: one
  // runtime. NVTX calls record into this process's session, and stage names stay ranges (the
  // process drives stages itself).
  const std::string dir = FreshDir("attach");
  const std::string cfg = WriteConfig(dir, "  steps: [1]\n  roles:\n    actor: {ranks: [0], contents: [cpu]}\n");
  setenv("NVTX_INJECTION64_PATH", RLPROF_NVTX_LIBRARY, 1);
  rlprof_options o;
  rlprof_options_init(&o);
  o.roles = "actor";
  o.run_id = "attach";
  o.quiet = 1;
  o.install_signal_handlers = 0;
  ASSERT_EQ(rlprof_init_from_config(cfg.c_str(), nullptr, 0, &o), RLPROF_OK) << rlprof_last_error();
  rlprof_step_begin(1);
  nvtxRangePushA("update_actor");  // NVTX's first call: it loads the library
  EXPECT_NE(dlopen(RLPROF_NVTX_LIBRARY, RTLD_NOW | RTLD_NOLOAD), nullptr);
  // The library's librlprof.so.0 is this process's: the loader found it by its soname.
  Dl_info mine{}, its{};
  void* lib = dlopen(RLPROF_NVTX_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&rlprof_step_begin), &mine), 0);
  ASSERT_NE(dladdr(dlsym(lib, "InitializeInjectionNvtx2"), &its), 0);
  EXPECT_NE(dlopen("librlprof.so.0", RTLD_NOW | RTLD_NOLOAD), nullptr) << mine.dli_fname;
  nvtxRangePushA("inner");
  nvtxRangePop();
  nvtxRangePop();
  rlprof_step_end();
  ASSERT_EQ(rlprof_shutdown(), RLPROF_OK);
  auto caps = Captures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u);
  const Seen s = Read(caps[0]);
  EXPECT_EQ(s.ranges.count("update_actor"), 1u);
  EXPECT_EQ(s.ranges.count("inner"), 1u);
  EXPECT_TRUE(s.stages.empty());
  const json m = Manifest(caps[0]);
  EXPECT_EQ(m["sources"]["nvtx"]["standalone"], 0) << m["sources"].dump();
}

TEST(NvtxInjectionTest, ASessionOpenedAfterTheLibraryStartedItsOwnTakesOver) {
  // NVTX is used before the process starts its own rlprof session (torch imported and used
  // before rlprof): the library's standalone session runs first and steps aside when the
  // process opens its own (rlprof_options.yield_to_next); from then on NVTX ranges go to the
  // process's session, which alone writes the captured step.
  if (dlopen(RLPROF_NVTX_LIBRARY, RTLD_NOW | RTLD_NOLOAD) != nullptr)
    GTEST_SKIP() << "needs a process whose NVTX is not yet initialised (ctest runs each test alone)";
  const std::string dir = FreshDir("takeover");
  const std::string cfg = WriteConfig(dir, "  steps: [1]\n  roles:\n    actor: {ranks: [0], contents: [cpu]}\n");
  setenv("NVTX_INJECTION64_PATH", RLPROF_NVTX_LIBRARY, 1);
  setenv("RLPROF_CONFIG", cfg.c_str(), 1);
  setenv("RLPROF_ROLES", "actor", 1);
  setenv("RLPROF_RUN_ID", "standalone", 1);
  nvtxRangePushA("early");  // loads the library: it starts its own session (no step yet)
  nvtxRangePop();
  unsetenv("RLPROF_CONFIG");
  EXPECT_TRUE(fs::exists(dir + "/out/standalone")) << "the library's own session ran first";
  rlprof_options o;
  rlprof_options_init(&o);
  o.roles = "actor";
  o.run_id = "host";
  o.quiet = 1;
  o.install_signal_handlers = 0;
  ASSERT_EQ(rlprof_init_from_config(cfg.c_str(), nullptr, 0, &o), RLPROF_OK) << rlprof_last_error();
  rlprof_step_begin(1);
  nvtxRangePushA("step");  // a plain range now: the host drives the steps
  nvtxRangePushA("late");
  nvtxRangePop();
  nvtxRangePop();
  rlprof_step_end();
  ASSERT_EQ(rlprof_shutdown(), RLPROF_OK);
  auto caps = Captures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_NE(caps[0].find("/host/step1/"), std::string::npos) << caps[0];
  const Seen s = Read(caps[0]);
  EXPECT_EQ(s.ranges.count("late"), 1u);
  EXPECT_EQ(s.ranges.count("step"), 1u);
  EXPECT_EQ(s.steps, (std::multiset<std::string>{"step 1"}));  // the host's only
  EXPECT_EQ(Manifest(caps[0])["sources"]["nvtx"]["standalone"], 0);
}

}  // namespace
}  // namespace rlprof::sources
