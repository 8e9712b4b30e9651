// synth_async: writes a synthetic asynchronous RL run as rlprof captures — R rollout replicas
// and T trainer ranks, each one process with one capture window, recording what rlprof.rl
// records (python/rlprof/rl.py): the weight_sync stage with its sync/<phase> ranges, the
// rollout_generate and actor_update stages, wait/<cause> ranges, and the rl/ counters
// (published and loaded versions, trainer versions, samples generated, staleness of what was
// consumed, queue depth, bytes transferred). For the async scale benchmark
// (bench/scale_bench.py --async) and for trying `summary --view async`, `compare` and the report
// on a thousand processes without a cluster.
//
//   synth_async OUT [--rollout 1024] [--trainers 256] [--versions 8] [--updates 2] [--groups 4]
//                   [--train-ms 100] [--generate-ms 30] [--run-id ID]
//
// The timeline (one clock, offsets 0): version v's sync starts at s_v; trainer 0 gathers (10 ms),
// waits for the rollout replicas (5 ms) and broadcasts (30 ms, 1 GB: rl/sync_bytes), then
// publishes v (rl/published_version); every replica joins the wait and the transfer and loads
// (5 ms; rl/weight_version v). Then each trainer runs `updates` updates — a wait for samples
// (20 ms ± 10 %) taking `groups` groups (rl/staleness 0–2, rl/queue_depth), an actor_update
// (`train-ms` ± 3 %), rl/trainer_version — and each replica generates groups back to back
// (`generate-ms` ± 10 %, rl/generated 1 each) until the next sync, waiting on the full queue
// for what is left. Before the first publish the replicas wait for weights. Deterministic.
// Prints what it wrote and the totals a reader must find (versions, groups generated and
// consumed).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/synth_jitter.h"
#include "src/base/files.h"
#include "src/base/version.h"
#include "src/format/capture.h"
#include "src/format/manifest.h"
#include "src/format/raw.h"

namespace {

using rlprof::format::Category;
using rlprof::format::Event;
using rlprof::format::EventKind;
using rlprof::format::TrackKind;

struct Options {
  std::string out;
  int64_t rollout = 1024, trainers = 256, versions = 8, updates = 2, groups = 4;
  int64_t train_ms = 100, generate_ms = 30;
  std::string run_id = "20261129-120000-async";
};

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kGather = 10 * kMs, kWait = 5 * kMs, kTransfer = 30 * kMs, kLoad = 5 * kMs;
constexpr double kSyncBytes = 1e9;

// String ids of every capture's string table.
enum Str : uint32_t {
  kSActor = 1, kSRollout, kSSync, kSGenerate, kSUpdate, kSGatherPh, kSWaitPh, kSTransferPh, kSLoadPh,
  kSWaitSamples, kSWaitWeights, kSWaitQueue, kSPublished, kSWeightVersion, kSTrainerVersion,
  kSGenerated, kSStaleness, kSQueueDepth, kSSyncBytes, kSStep, kSCount
};
constexpr const char* kStrings[] = {
    "", "actor", "rollout", "weight_sync", "rollout_generate", "actor_update", "sync/gather", "sync/wait",
    "sync/transfer", "sync/load", "wait/samples", "wait/weights", "wait/queue_full", "rl/published_version",
    "rl/weight_version", "rl/trainer_version", "rl/generated", "rl/staleness", "rl/queue_depth",
    "rl/sync_bytes", "step"};
static_assert(std::size(kStrings) == kSCount);

using rlprof::bench::Jitter;  // (rank, step, stage) → [-1, 1), deterministic

Event Range(int64_t ts, int64_t dur, uint32_t name, Category cat = Category::kUser, uint32_t arg0 = 0,
            uint32_t arg1 = 0) {
  Event e{};
  e.ts_ns = ts; e.payload = dur; e.name = name; e.track = 1; e.kind = EventKind::kComplete; e.category = cat;
  e.arg0 = arg0; e.arg1 = arg1;
  return e;
}

Event Counter(int64_t ts, uint32_t name, double value) {
  Event e{};
  e.ts_ns = ts; e.name = name; e.track = 1; e.kind = EventKind::kCounter; e.category = Category::kUser;
  e.set_counter_value(value);
  return e;
}

struct Timeline {
  std::vector<int64_t> sync;  // s_v: when version v's sync starts
  int64_t interval = 0;       // from one sync's start to the next
  int64_t end = 0;
};

Timeline Plan(const Options& o) {
  Timeline t;
  const int64_t startup = 200 * kMs;
  // An interval: the sync, then `updates` updates of a wait and an update (the slowest trainer's).
  t.interval = kGather + kWait + kTransfer + kLoad + o.updates * (22 * kMs + o.train_ms * kMs * 103 / 100) + 5 * kMs;
  for (int64_t v = 0; v < o.versions; ++v) t.sync.push_back(startup + v * t.interval);
  t.end = startup + o.versions * t.interval;
  return t;
}

struct Totals {
  int64_t generated = 0, consumed = 0, captures = 0, events = 0, bytes = 0;
};

std::vector<Event> Trainer(const Options& o, const Timeline& tl, int64_t rank, Totals* tot) {
  std::vector<Event> ev;
  int64_t step = 0;
  for (int64_t v = 0; v < o.versions; ++v) {
    const int64_t s = tl.sync[v], published = s + kGather + kWait + kTransfer;
    if (rank == 0) {
      ev.push_back(Range(s, published - s, kSSync, Category::kStage, 0, kSActor));
      ev.push_back(Range(s, kGather, kSGatherPh));
      ev.push_back(Range(s + kGather, kWait, kSWaitPh));
      ev.push_back(Range(s + kGather + kWait, kTransfer, kSTransferPh));
      ev.push_back(Counter(s + kGather + kWait, kSSyncBytes, kSyncBytes));
      ev.push_back(Counter(published, kSPublished, static_cast<double>(v)));
    }
    int64_t t = published + kLoad;
    for (int64_t u = 0; u < o.updates; ++u) {
      ++step;
      const int64_t wait = static_cast<int64_t>(20.0 * kMs * (1.0 + 0.1 * Jitter(rank, step, 1)));
      const int64_t train = static_cast<int64_t>(static_cast<double>(o.train_ms * kMs) * (1.0 + 0.03 * Jitter(rank, step, 2)));
      ev.push_back(Range(t, wait + train, kSStep, Category::kStep, static_cast<uint32_t>(step)));
      ev.push_back(Range(t, wait, kSWaitSamples));
      for (int64_t g = 0; g < o.groups; ++g) {
        const int64_t at = t + wait * (g + 1) / o.groups;
        ev.push_back(Counter(at, kSStaleness, static_cast<double>((rank + step + g) % 3)));
        ev.push_back(Counter(at, kSQueueDepth, static_cast<double>((rank + g) % 5)));
        ++tot->consumed;
      }
      ev.push_back(Range(t + wait, train, kSUpdate, Category::kStage, 0, kSActor));
      ev.push_back(Counter(t + wait + train, kSTrainerVersion, static_cast<double>(step)));
      t += wait + train + kMs;
    }
  }
  return ev;
}

std::vector<Event> Rollout(const Options& o, const Timeline& tl, int64_t replica, Totals* tot) {
  std::vector<Event> ev;
  ev.push_back(Range(0, tl.sync[0] + kGather, kSWaitWeights));  // start-up: no weights yet
  int64_t n = 0;
  for (int64_t v = 0; v < o.versions; ++v) {
    const int64_t s = tl.sync[v], joined = s + kGather;
    const int64_t loaded = joined + kWait + kTransfer + kLoad;
    ev.push_back(Range(joined, loaded - joined, kSSync, Category::kStage, 0, kSRollout));
    ev.push_back(Range(joined, kWait, kSWaitPh));
    ev.push_back(Range(joined + kWait, kTransfer, kSTransferPh));
    ev.push_back(Counter(joined + kWait, kSSyncBytes, kSyncBytes));
    ev.push_back(Range(joined + kWait + kTransfer, kLoad, kSLoadPh));
    ev.push_back(Counter(loaded, kSWeightVersion, static_cast<double>(v)));
    const int64_t until = v + 1 < o.versions ? tl.sync[v + 1] + kGather : tl.end;
    int64_t t = loaded;
    for (;;) {
      const int64_t g = static_cast<int64_t>(static_cast<double>(o.generate_ms * kMs) * (1.0 + 0.1 * Jitter(replica, ++n, 3)));
      if (t + g > until) break;
      ev.push_back(Range(t, g, kSGenerate, Category::kStage, 0, kSRollout));
      ev.push_back(Counter(t + g, kSGenerated, 1));
      ++tot->generated;
      t += g;
    }
    if (until > t) ev.push_back(Range(t, until - t, kSWaitQueue));  // the queue is full
  }
  return ev;
}

bool Write(const Options& o, int64_t rank, bool trainer, std::vector<Event> events, const Timeline& tl,
           Totals* tot) {
  const int64_t world = o.trainers + o.rollout;
  char host[32];
  std::snprintf(host, sizeof host, "node%03lld", static_cast<long long>(rank / 8));
  const uint32_t pid = 20000 + static_cast<uint32_t>(rank);
  const std::string dir = o.out + "/" + o.run_id + "/step1/e2e/rank" + std::to_string(rank) + "-" + host + "-" +
                          std::to_string(pid);
  if (!rlprof::base::MakeDirs(dir).ok()) return false;
  rlprof::format::SortEventsByTime(&events);
  rlprof::format::Manifest m;
  m.rlprof_version = rlprof::base::Version();
  m.run_id = o.run_id;
  m.scope = "e2e";
  m.mode = "e2e";
  m.role = trainer ? "actor" : "rollout";
  m.steps = {1};
  m.rank = rank;
  m.local_rank = rank % 8;
  m.world_size = world;
  m.host = host;
  m.pid = pid;
  m.roles = {m.role};
  m.identity_source = "explicit";
  m.clock_source = "monotonic";
  m.monotonic_anchor_ns = 1'000'000'000;
  m.realtime_anchor_ns = 1'795'000'000'000'000'000;
  m.window_open_ns = 0;
  m.window_close_ns = tl.end;
  m.close_reason = "shutdown";
  m.contents = {"cpu"};
  m.event_count = static_cast<int64_t>(events.size());
  m.threads = 1;
  m.complete = true;
  std::vector<rlprof::format::StringEntry> strings;
  for (uint32_t i = 1; i < kSCount; ++i) strings.push_back({i, kStrings[i]});
  const std::vector<rlprof::format::TrackEntry> tracks = {{1, TrackKind::kThread, pid, pid, "main"}};
  auto writer = rlprof::format::RawWriter::Create(dir + "/events.rlp", {rank, pid, host}, 1 << 16);
  if (!writer.ok()) return false;
  auto& wr = **writer;
  if (!wr.AddStrings(strings).ok() || !wr.AddTracks(tracks).ok() || !wr.AddEvents(events).ok() || !wr.Close().ok())
    return false;
  m.files = {{"events.rlp", static_cast<int64_t>(wr.bytes_written())}};
  if (!rlprof::base::WriteFileAtomic(dir + "/manifest.json", rlprof::format::ManifestToJson(m)).ok()) return false;
  ++tot->captures;
  tot->events += static_cast<int64_t>(events.size());
  tot->bytes += static_cast<int64_t>(wr.bytes_written());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Write a synthetic asynchronous RL run (rollout replicas + trainer ranks) as rlprof captures");
  app.add_option("out", o.out, "Save path: the run goes to OUT/RUN_ID")->required();
  app.add_option("--rollout", o.rollout, "Rollout replicas (default 1024)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--trainers", o.trainers, "Trainer ranks (default 256)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--versions", o.versions, "Versions published (default 8)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--updates", o.updates, "Updates per version (default 2)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--groups", o.groups, "Groups a trainer takes per update (default 4)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--train-ms", o.train_ms, "An update (default 100)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--generate-ms", o.generate_ms, "A group generated (default 30)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--run-id", o.run_id, "Run id (the run's folder name)");
  CLI11_PARSE(app, argc, argv);
  const auto t0 = std::chrono::steady_clock::now();
  const Timeline tl = Plan(o);
  Totals tot;
  for (int64_t r = 0; r < o.trainers + o.rollout; ++r) {
    const bool trainer = r < o.trainers;
    std::vector<Event> ev = trainer ? Trainer(o, tl, r, &tot) : Rollout(o, tl, r - o.trainers, &tot);
    if (!Write(o, r, trainer, std::move(ev), tl, &tot)) {
      std::fprintf(stderr, "synth_async: cannot write under %s\n", o.out.c_str());
      return 4;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s/%s: %lld rollout replicas + %lld trainers, %lld versions, %lld captures, %lld events, "
              "%.1f MB, %.2f s\ntotals: versions %lld generated %lld consumed %lld\n",
              o.out.c_str(), o.run_id.c_str(), static_cast<long long>(o.rollout), static_cast<long long>(o.trainers),
              static_cast<long long>(o.versions), static_cast<long long>(tot.captures),
              static_cast<long long>(tot.events), static_cast<double>(tot.bytes) / 1e6, s,
              static_cast<long long>(o.versions), static_cast<long long>(tot.generated),
              static_cast<long long>(tot.consumed));
  return 0;
}
