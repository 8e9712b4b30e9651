// synth_run: writes a synthetic GRPO run of R ranks × S steps as rlprof captures, laid out
// exactly as the runtime lays them out (`<out>/<run_id>/step<N>/<scope>/rank<R>-<host>-<pid>/`
// with manifest.json from the runtime's own writer and events.rlp from the raw writer), for
// the scale benchmarks (bench/scale_bench.py) and for trying the report or the merged run
// timeline on hundreds of ranks without a cluster.
//
//   synth_run OUT [--ranks 1024] [--steps 4] [--mode e2e|discrete] [--placement colocated|split]
//             [--ops 8] [--slow-rank R] [--ranks-per-host 8] [--run-id ID]
//
// Each step runs the four GRPO stages (rollout_generate by role rollout, ref_compute_log_prob
// by ref, actor_compute_log_prob and actor_update by actor). Inside a stage a rank runs `ops`
// operators on its main thread (matmuls the longest), each launching (cudaLaunchKernel, one
// correlation id) a kernel on its GPU stream, then waits in an all-reduce (host communication
// range + NCCL kernel) until the slowest rank arrives: the slow rank (default: the last
// rollout rank) generates 35 % slower, so every other rollout rank shows exposed communication
// at the end of rollout_generate. Ranks jitter ±3 % (deterministic). Each host
// has its own clock: its captures carry offset_to_rank0_ns, and aligned times agree.
// colocated (verl's hybrid engine): every rank hosts every role; split: the first half of the
// ranks are rollout, the next quarter ref, the rest actor.
// e2e: one capture per (step, rank) holding the step range and its stages; discrete: one
// capture per (step, stage, rank) holding that stage (scope = the stage name).
// Prints what it wrote (captures, events, bytes, seconds). Deterministic for given options.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/synth_jitter.h"
#include "src/base/files.h"
#include "src/base/version.h"
#include "src/format/capture.h"
#include "src/format/raw.h"
#include "src/format/manifest.h"

namespace {

using rlprof::format::Category;
using rlprof::format::Event;
using rlprof::format::EventKind;
using rlprof::format::TrackKind;

struct Options {
  std::string out;
  int64_t ranks = 1024, steps = 4, ops = 8, slow_rank = -1, ranks_per_host = 8;
  std::string mode = "e2e", placement = "colocated", run_id = "20261126-120000-synth";
};

struct StageSpec {
  const char* name;
  const char* role;
  int64_t base_ns;
};
constexpr StageSpec kStages[] = {{"rollout_generate", "rollout", 1'200'000'000},
                                 {"ref_compute_log_prob", "ref", 250'000'000},
                                 {"actor_compute_log_prob", "actor", 300'000'000},
                                 {"actor_update", "actor", 800'000'000}};
constexpr int64_t kGapNs = 20'000'000;        // between stages (resharding, data movement)
constexpr int64_t kAllReduceNs = 3'000'000;   // the all-reduce itself, once everyone is there
constexpr double kSlowFactor = 1.35;

// String ids of every capture's string table.
enum Str : uint32_t {
  kSStep = 1, kSRoleRollout, kSRoleRef, kSRoleActor, kSAllReduce, kSGroup, kSMem, kSNccl,
  kSOp0  // then kOpNames, then kKernelNames, then the stage names
};
constexpr const char* kOpNames[] = {"aten::mm", "aten::softmax", "aten::add", "aten::layer_norm"};
constexpr const char* kKernelNames[] = {"sm90_xmma_gemm_bf16bf16_bf16f32", "softmax_warp_forward",
                                        "vectorized_elementwise_kernel", "layer_norm_fwd_kernel"};
constexpr uint32_t kSKernel0 = kSOp0 + 4, kSStage0 = kSKernel0 + 4, kSLaunch = kSStage0 + 4;

uint32_t RoleId(const char* role) {
  std::string r = role;
  return r == "rollout" ? kSRoleRollout : r == "ref" ? kSRoleRef : kSRoleActor;
}

using rlprof::bench::Jitter;  // (rank, step, stage) → [-1, 1), deterministic

bool RankRunsStage(const Options& o, int64_t rank, const StageSpec& s) {
  if (o.placement == "colocated") return true;
  const int64_t rollout = (o.ranks + 1) / 2, ref = std::max<int64_t>(1, o.ranks / 4);
  const std::string role = s.role;
  if (rank < rollout) return role == "rollout";
  if (rank < rollout + ref) return role == "ref";
  return role == "actor";
}

std::vector<std::string> RolesOf(const Options& o, int64_t rank) {
  std::vector<std::string> roles;
  for (const char* r : {"rollout", "ref", "actor"})
    for (const auto& s : kStages)
      if (std::string(s.role) == r && RankRunsStage(o, rank, s)) { roles.push_back(r); break; }
  return roles;
}

Event Ev(int64_t ts, int64_t dur, uint32_t name, uint16_t track, EventKind kind, Category cat,
         uint32_t arg0 = 0, uint32_t arg1 = 0) {
  Event e{};
  e.ts_ns = ts; e.payload = dur; e.name = name; e.track = track; e.kind = kind; e.category = cat;
  e.arg0 = arg0; e.arg1 = arg1;
  return e;
}

// Events of one stage on one rank, in the rank's local clock (`off` = offset to rank 0).
void StageEvents(const Options& o, size_t si, int64_t start, int64_t compute, int64_t end,
                 int64_t off, uint32_t* corr, std::vector<Event>* ev) {
  const StageSpec& s = kStages[si];
  const int64_t t0 = start - off;
  ev->push_back(Ev(t0, end - start, kSStage0 + si, 1, EventKind::kComplete, Category::kStage, 0,
                   RoleId(s.role)));
  // Operators take different shares of the compute (matmuls most), each 90 % of its slot.
  constexpr int64_t kWeight[] = {5, 2, 1, 3};
  int64_t total_weight = 0;
  for (int64_t k = 0; k < o.ops; ++k) total_weight += kWeight[(k + si) % 4];
  int64_t ts = t0;
  for (int64_t k = 0; k < o.ops; ++k) {
    const uint32_t which = static_cast<uint32_t>((k + si) % 4);
    const int64_t slot = compute * kWeight[which] / std::max<int64_t>(1, total_weight);
    const uint32_t c = ++*corr;
    ev->push_back(Ev(ts + slot / 50, slot * 9 / 10, kSOp0 + which, 1, EventKind::kComplete,
                     Category::kOperator, c));
    ev->push_back(Ev(ts + slot / 50 + 1'000, 4'000, kSLaunch, 1, EventKind::kComplete,
                     Category::kRuntime, c));  // the launch: links the kernel to its operator
    ev->push_back(Ev(ts + slot / 20, slot * 8 / 10, kSKernel0 + which, 2, EventKind::kComplete,
                     Category::kKernel, c));
    ts += slot;
  }
  // The all-reduce: posted when this rank's compute ends, done when the slowest rank's is.
  const int64_t ar = t0 + compute;
  ev->push_back(Ev(ar, end - start - compute, kSAllReduce, 1, EventKind::kComplete,
                   Category::kCommunication, 64u << 20, kSGroup));
  ev->push_back(Ev(ar + 10'000, end - start - compute - 10'000, kSNccl, 2, EventKind::kComplete,
                   Category::kKernel, ++*corr));
  Event mem = Ev(t0, 0, kSMem, 3, EventKind::kCounter, Category::kMemory);
  mem.set_counter_value(static_cast<double>((20 + 4 * si) * (int64_t{1} << 30)));
  ev->push_back(mem);
}

struct Written {
  size_t captures = 0, events = 0, bytes = 0;
};

bool WriteCapture(const Options& o, int64_t rank, int64_t step, const std::string& scope,
                  const std::string& stage, const std::string& role, int64_t off,
                  std::vector<Event> events, Written* w) {
  const int64_t host_index = rank / o.ranks_per_host;
  char host[32];
  std::snprintf(host, sizeof host, "node%03lld", static_cast<long long>(host_index));
  const uint32_t pid = 10000 + static_cast<uint32_t>(rank);
  const std::string dir = o.out + "/" + o.run_id + "/step" + std::to_string(step) + "/" + scope +
                          "/rank" + std::to_string(rank) + "-" + host + "-" + std::to_string(pid);
  if (!rlprof::base::MakeDirs(dir).ok()) return false;
  rlprof::format::SortEventsByTime(&events);
  rlprof::format::Manifest m;
  m.rlprof_version = rlprof::base::Version();
  m.run_id = o.run_id;
  m.scope = scope;
  m.mode = stage.empty() ? "e2e" : "discrete";
  m.stage = stage;
  m.role = role;
  m.steps = {step};
  m.rank = rank;
  m.local_rank = rank % o.ranks_per_host;
  m.world_size = o.ranks;
  m.host = host;
  m.pid = pid;
  m.roles = RolesOf(o, rank);
  m.identity_source = "explicit";
  m.clock_source = "monotonic";
  m.monotonic_anchor_ns = 1'000'000'000 - off;
  m.realtime_anchor_ns = 1'795'000'000'000'000'000;
  m.offset_to_rank0_ns = off;
  m.offset_measured = off != 0;
  m.window_open_ns = events.empty() ? 0 : events.front().ts_ns;
  for (const Event& e : events)
    if (e.kind == EventKind::kComplete)
      m.window_close_ns = std::max(m.window_close_ns, e.ts_ns + e.payload);
  m.close_reason = stage.empty() ? "step_end" : "stage_end";
  m.contents = {"cpu", "ops", "cuda"};
  m.event_count = static_cast<int64_t>(events.size());
  m.threads = 1;
  m.complete = true;
  std::vector<rlprof::format::StringEntry> strings;
  auto add = [&](uint32_t id, const std::string& s) { strings.push_back({id, s}); };
  add(kSStep, "rl/step"); add(kSRoleRollout, "rollout"); add(kSRoleRef, "ref");
  add(kSRoleActor, "actor"); add(kSAllReduce, "all_reduce"); add(kSGroup, "dp");
  add(kSMem, "gpu_mem_allocated"); add(kSNccl, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  for (uint32_t i = 0; i < 4; ++i) add(kSOp0 + i, kOpNames[i]);
  for (uint32_t i = 0; i < 4; ++i) add(kSKernel0 + i, kKernelNames[i]);
  for (uint32_t i = 0; i < 4; ++i) add(kSStage0 + i, kStages[i].name);
  add(kSLaunch, "cudaLaunchKernel");
  const std::vector<rlprof::format::TrackEntry> tracks = {
      {1, TrackKind::kThread, static_cast<uint64_t>(pid), pid, "main"},
      {2, TrackKind::kDeviceStream, (static_cast<uint64_t>(rank % o.ranks_per_host) << 32) | 7,
       pid, "stream 7"},
      {3, TrackKind::kCounter, 0, pid, "gpu_mem_allocated"}};
  auto writer = rlprof::format::RawWriter::Create(dir + "/events.rlp", {rank, pid, host}, 1 << 16);
  if (!writer.ok()) return false;
  auto& wr = **writer;
  if (!wr.AddStrings(strings).ok() || !wr.AddTracks(tracks).ok() || !wr.AddEvents(events).ok() ||
      !wr.Close().ok())
    return false;
  m.files = {{"events.rlp", static_cast<int64_t>(wr.bytes_written())}};
  if (!rlprof::base::WriteFileAtomic(dir + "/manifest.json", rlprof::format::ManifestToJson(m)).ok())
    return false;
  ++w->captures;
  w->events += events.size();
  w->bytes += wr.bytes_written();
  return true;
}

int Generate(const Options& o) {
  const auto t_start = std::chrono::steady_clock::now();
  // The straggler generates slower: by default the last rank that runs rollout_generate.
  const int64_t slow = o.slow_rank >= 0 ? o.slow_rank
                       : o.placement == "split" ? (o.ranks + 1) / 2 - 1 : o.ranks - 1;
  Written w;
  std::vector<uint32_t> corr(o.ranks, 0);
  int64_t t = 0;  // rank 0's clock, ns from the first step
  for (int64_t step = 1; step <= o.steps; ++step) {
    const int64_t step_start = t;
    // Per stage and rank: compute time; the stage ends for all at the slowest rank's + all-reduce.
    std::vector<std::vector<int64_t>> compute(std::size(kStages), std::vector<int64_t>(o.ranks, -1));
    std::vector<int64_t> starts(std::size(kStages)), ends(std::size(kStages));
    for (size_t si = 0; si < std::size(kStages); ++si) {
      starts[si] = t;
      int64_t worst = 0;
      for (int64_t r = 0; r < o.ranks; ++r) {
        if (!RankRunsStage(o, r, kStages[si])) continue;
        double f = 1.0 + 0.03 * Jitter(r, step, si);
        if (r == slow && si == 0) f *= kSlowFactor;
        compute[si][r] = static_cast<int64_t>(static_cast<double>(kStages[si].base_ns) * f);
        worst = std::max(worst, compute[si][r]);
      }
      ends[si] = t + worst + kAllReduceNs;
      t = ends[si] + kGapNs;
    }
    const int64_t step_end = t - kGapNs + 1'000'000;
    for (int64_t r = 0; r < o.ranks; ++r) {
      const int64_t host = r / o.ranks_per_host;
      const int64_t off = host == 0 ? 0 : (host % 2 ? 1 : -1) * (host * 7919 % 500'000 + 1'000);
      std::vector<Event> all;
      if (o.mode == "e2e")
        all.push_back(Ev(step_start - off, step_end - step_start, kSStep, 1, EventKind::kComplete,
                         Category::kStep, static_cast<uint32_t>(step)));
      for (size_t si = 0; si < std::size(kStages); ++si) {
        if (compute[si][r] < 0) continue;
        std::vector<Event> ev;
        StageEvents(o, si, starts[si], compute[si][r], ends[si], off, &corr[r], &ev);
        if (o.mode == "e2e") {
          all.insert(all.end(), ev.begin(), ev.end());
        } else if (!WriteCapture(o, r, step, kStages[si].name, kStages[si].name, kStages[si].role,
                                 off, std::move(ev), &w)) {
          std::fprintf(stderr, "synth_run: cannot write under %s\n", o.out.c_str());
          return 4;
        }
      }
      if (o.mode == "e2e" && !WriteCapture(o, r, step, "e2e", "", "", off, std::move(all), &w)) {
        std::fprintf(stderr, "synth_run: cannot write under %s\n", o.out.c_str());
        return 4;
      }
    }
    t += 200'000'000;  // the trainer's own work between steps
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("wrote %s/%s: %lld ranks x %lld steps (%s, %s), %zu captures, %zu events, %.1f MB, %.2f s\n",
              o.out.c_str(), o.run_id.c_str(), static_cast<long long>(o.ranks),
              static_cast<long long>(o.steps), o.mode.c_str(), o.placement.c_str(), w.captures,
              w.events, static_cast<double>(w.bytes) / 1e6, s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Write a synthetic GRPO run of R ranks x S steps as rlprof captures");
  app.add_option("out", o.out, "Save path: the run goes to OUT/RUN_ID")->required();
  app.add_option("--ranks", o.ranks, "Ranks (default 1024)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--steps", o.steps, "Steps (default 4)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--mode", o.mode, "e2e | discrete")->check(CLI::IsMember({"e2e", "discrete"}));
  app.add_option("--placement", o.placement, "colocated | split")
      ->check(CLI::IsMember({"colocated", "split"}));
  app.add_option("--ops", o.ops, "Operators (each with a kernel) per stage (default 8)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--slow-rank", o.slow_rank, "The straggler (default: the last rollout rank)");
  app.add_option("--ranks-per-host", o.ranks_per_host, "Ranks per host (default 8)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--run-id", o.run_id, "Run id (the run's folder name)");
  CLI11_PARSE(app, argc, argv);
  return Generate(o);
}
