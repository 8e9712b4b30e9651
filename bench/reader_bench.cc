// Reader and analysis throughput: generates a Kineto-style trace (cpu_op with shapes,
// cuda_runtime launches, kernels on a GPU stream, ac2g flows, ProfilerStep ranges; Kineto's own
// layout) of RLPROF_BENCH_MB megabytes (default 20), then measures in the same run
//   - rlprof::analysis::ReadTrace alone, and ingest + breakdown (ReadTrace + AnalyseTrace: the
//     partition, every view, op statistics): MB/s per CPU second (one thread) and peak RSS
//     relative to the file size;
//   - the baseline `/usr/bin/python3 -c 'import json; json.load(open(F))'` on the same file;
//   - scaling with jobs: RLPROF_BENCH_FILES files (default 4) of MB/FILES each analysed by
//     AnalyseInputs (what `rlprof analyse --jobs N` runs) with 1 job and with every core,
//     wall time, speed-up and efficiency (speed-up / jobs).
// Prints the figures and the ratios. RLPROF_BENCH_FILE=path reads that file instead (no
// scaling part); RLPROF_BENCH_NO_PYTHON=1 skips the baseline (for profiling the reader alone).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/run/run.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Writes about `target` bytes of Kineto JSON; returns the number of events.
size_t Generate(const std::string& path, size_t target) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return 0;
  std::fprintf(f,
               "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
               "\"NVIDIA H100\", \"totalGlobalMem\": 85899345920, \"computeMajor\": 9, "
               "\"computeMinor\": 0, \"numSms\": 132}\n  ],\n  \"distributedInfo\": {\"backend\": "
               "\"nccl\", \"rank\": 0, \"world_size\": 8},\n  \"displayTimeUnit\": \"ms\",\n  "
               "\"baseTimeNanoseconds\": 1767225600000000000,\n  \"traceEvents\": [\n");
  const char* ops[] = {"aten::mm", "aten::add_", "aten::linear", "aten::layer_norm", "aten::softmax"};
  size_t events = 0;
  constexpr uint64_t kIterationsPerStep = 4000;
  int64_t ts = 1000000;  // ns
  uint64_t corr = 1;
  int step = 0;
  auto us = [](int64_t ns) { return std::to_string(ns / 1000) + "." + std::to_string(1000 + ns % 1000).substr(1); };
  const char* sep = "";
  while (static_cast<size_t>(std::ftell(f)) < target) {
    if (corr % kIterationsPerStep == 1) {  // one ProfilerStep per 4000 launches (80 ms)
      std::fprintf(f,
                   "%s  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                   "\"ProfilerStep#%d\", \"pid\": 4100, \"tid\": 4100,\n    \"ts\": %s, \"dur\": "
                   "%s,\n    \"args\": {\n      \"External id\": %llu\n    }\n  }",
                   sep, step++, us(ts).c_str(), us(kIterationsPerStep * 20000 - 1000).c_str(),
                   static_cast<unsigned long long>(corr));
      sep = ",\n";
      ++events;
    }
    const char* op = ops[events % 5];
    std::fprintf(f,
                 "%s  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 4100, "
                 "\"tid\": 4100,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External "
                 "id\": %llu,\"Record function id\": 0, \"Ev Idx\": %zu, \"Input Dims\": [[64, "
                 "1024], [1024, 4096]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"], "
                 "\"Sequence number\": %zu, \"Fwd thread id\": 0\n    }\n  }",
                 sep, op, us(ts).c_str(), us(12345).c_str(), static_cast<unsigned long long>(corr),
                 events, events);
    std::fprintf(f,
                 ",\n  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                 "\"cudaLaunchKernel\", \"pid\": 4100, \"tid\": 4100,\n    \"ts\": %s, \"dur\": "
                 "%s,\n    \"args\": {\n      \"External id\": %llu, \"cbid\": 211, \"correlation\": "
                 "%llu\n    }\n  }",
                 us(ts + 2000).c_str(), us(4500).c_str(), static_cast<unsigned long long>(corr),
                 static_cast<unsigned long long>(corr));
    std::fprintf(f,
                 ",\n  {\n    \"ph\": \"s\", \"id\": %llu, \"pid\": 4100, \"tid\": 4100, \"ts\": %s, "
                 "\"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }",
                 static_cast<unsigned long long>(corr), us(ts + 2000).c_str());
    std::fprintf(f,
                 ",\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                 "\"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
                 "execute_segment_k_off_kernel__5x_cublas\", \"pid\": 0, \"tid\": 7,\n    \"ts\": %s, "
                 "\"dur\": %s,\n    \"args\": {\n      \"External id\": %llu,\n      \"queued\": 0, "
                 "\"device\": 0, \"context\": 1,\n      \"stream\": 7, \"correlation\": %llu,\n      "
                 "\"registers per thread\": 168,\n      \"shared memory\": 213248,\n      \"blocks "
                 "per SM\": 0.984848,\n      \"warps per SM\": 3.939394,\n      \"grid\": [130, 1, "
                 "1],\n      \"block\": [128, 1, 1],\n      \"est. achieved occupancy %%\": 6\n    "
                 "}\n  }",
                 us(ts + 9000).c_str(), us(7777).c_str(), static_cast<unsigned long long>(corr),
                 static_cast<unsigned long long>(corr));
    std::fprintf(f,
                 ",\n  {\n    \"ph\": \"f\", \"id\": %llu, \"pid\": 0, \"tid\": 7, \"ts\": %s, "
                 "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }",
                 static_cast<unsigned long long>(corr), us(ts + 9000).c_str());
    events += 5;
    ++corr;
    ts += 20000;
  }
  std::fprintf(f,
               ",\n  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": "
               "\"\", \"tid\": \"\", \"ts\": %s\n  }\n],\n  \"traceName\": \"bench.pt.trace.json\"\n}\n",
               us(ts).c_str());
  std::fclose(f);
  return events + 1;
}

double CpuSeconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long MaxRssKb(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return ru.ru_maxrss;
}

}  // namespace

std::string TempPath(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("rlprof_reader_bench_" + std::to_string(getpid()) + tag + ".json"))
      .string();
}

struct Timing {
  double wall = 1e30, cpu = 1e30;  // seconds, best of the repetitions
};

// AnalyseInputs over `files` with `jobs` threads: wall and process CPU seconds, best of `reps`.
Timing AnalyseTimed(const std::vector<std::string>& files, size_t jobs, int reps) {
  Timing best;
  for (int r = 0; r < reps; ++r) {
    const double c0 = CpuSeconds(RUSAGE_SELF);
    auto t0 = Clock::now();
    auto results = rlprof::analysis::AnalyseInputs(files, rlprof::analysis::Classifier::Default(),
                                                   rlprof::analysis::AnalysisOptions{}, jobs);
    auto t1 = Clock::now();
    const double cpu = CpuSeconds(RUSAGE_SELF) - c0;
    for (const auto& res : results)
      if (!res.status.ok()) std::fprintf(stderr, "analyse failed: %s\n", res.status.ToString().c_str());
    best.wall = std::min(best.wall, Seconds(t0, t1));
    best.cpu = std::min(best.cpu, cpu);
  }
  return best;
}

void Scaling(size_t mb) {
  const char* files_env = std::getenv("RLPROF_BENCH_FILES");
  const size_t n = files_env ? std::strtoull(files_env, nullptr, 10) : 4;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (n < 2 || cores < 2) return;
  std::vector<std::string> files;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    files.push_back(TempPath("_part" + std::to_string(i)));
    Generate(files.back(), std::max<size_t>(1, mb / n) << 20);
    total += static_cast<double>(std::filesystem::file_size(files.back()));
  }
  const Timing t1 = AnalyseTimed(files, 1, 3);
  const Timing tn = AnalyseTimed(files, cores, 3);
  const double mbytes = total / (1 << 20);
  std::printf("scaling              %zu files, %.1f MiB: --jobs 1 %.3f s wall (%.0f MiB/s), --jobs %zu "
              "%.3f s wall (%.0f MiB/s)\n",
              n, mbytes, t1.wall, mbytes / t1.wall, cores, tn.wall, mbytes / tn.wall);
  // Wall speed-up needs idle cores; the CPU-time ratio shows what parallelism itself costs
  // (1.00 = none), which holds on a busy machine too.
  std::printf("speed-up             %.2fx with %zu jobs = %.0f%% efficiency (wall, best of 3); CPU "
              "time %.3f s vs %.3f s = %.2fx of one job's\n",
              t1.wall / tn.wall, cores, 100.0 * t1.wall / tn.wall / static_cast<double>(cores), tn.cpu,
              t1.cpu, tn.cpu / t1.cpu);
  for (const auto& f : files) std::filesystem::remove(f);
}

int main() {
  const char* mb_env = std::getenv("RLPROF_BENCH_MB");
  const char* file_env = std::getenv("RLPROF_BENCH_FILE");
  size_t mb = mb_env ? std::strtoull(mb_env, nullptr, 10) : 20;
  std::string path;
  bool generated = false;
  if (file_env != nullptr) {
    path = file_env;
  } else {
    path = TempPath("");
    size_t n = Generate(path, mb << 20);
    std::printf("generated %s: %zu events\n", path.c_str(), n);
    generated = true;
  }
  double bytes = static_cast<double>(std::filesystem::file_size(path));
  long rss_before = MaxRssKb(RUSAGE_SELF);

  double c0 = CpuSeconds(RUSAGE_SELF);
  auto t0 = Clock::now();
  auto trace = rlprof::analysis::ReadTrace(path);
  auto t1 = Clock::now();
  double read_cpu = CpuSeconds(RUSAGE_SELF) - c0;
  if (!trace.ok()) {
    std::fprintf(stderr, "ReadTrace failed: %s\n", trace.status().ToString().c_str());
    return 1;
  }
  long rss_read = MaxRssKb(RUSAGE_SELF);
  double read_s = Seconds(t0, t1);
  size_t slices = trace->size();

  // The breakdown of the trace just read (one thread, like the read).
  double a0 = CpuSeconds(RUSAGE_SELF);
  auto analysis = rlprof::analysis::AnalyseTrace(*trace, rlprof::analysis::Classifier::Default(),
                                                 rlprof::analysis::AnalysisOptions{});
  double analyse_cpu = CpuSeconds(RUSAGE_SELF) - a0;
  long rss_after = MaxRssKb(RUSAGE_SELF);
  const size_t steps = analysis.steps.size();
  trace = rlprof::base::Status(rlprof::base::StatusCode::kInternal, "released");  // free it
  analysis = {};

  double mbytes = bytes / (1 << 20);
  if (std::getenv("RLPROF_BENCH_NO_PYTHON") != nullptr) {
    std::printf("rlprof ReadTrace     %.3f s wall  %.3f s CPU  %.0f MiB/s per core, %zu slices\n",
                read_s, read_cpu, mbytes / read_cpu, slices);
    std::printf("ingest + breakdown   %.3f s CPU  %.0f MiB/s per core\n", read_cpu + analyse_cpu,
                mbytes / (read_cpu + analyse_cpu));
    if (generated && std::getenv("RLPROF_BENCH_KEEP") == nullptr) std::filesystem::remove(path);
    return 0;
  }
  auto p0 = Clock::now();
  pid_t child = fork();
  if (child == 0) {
    execl("/usr/bin/python3", "python3", "-c", "import json,sys; json.load(open(sys.argv[1]))",
          path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  auto p1 = Clock::now();
  double py_s = Seconds(p0, p1);
  double py_cpu = CpuSeconds(RUSAGE_CHILDREN);
  bool py_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  const double total_cpu = read_cpu + analyse_cpu;
  std::printf("file                 %.1f MiB (%zu slices read, %zu steps)\n", mbytes, slices, steps);
  // CPU seconds are the fair "per core" measure on a shared machine; wall time is shown too.
  std::printf("rlprof ReadTrace     %.3f s wall  %.3f s CPU  %.0f MiB/s per core (1 thread)\n",
              read_s, read_cpu, mbytes / read_cpu);
  std::printf("ingest + breakdown   %.3f s CPU (analysis %.3f s)  %.0f MiB/s per core (1 thread)\n",
              total_cpu, analyse_cpu, mbytes / total_cpu);
  if (py_ok) {
    std::printf("python3 json.load    %.3f s wall  %.3f s CPU  %.0f MiB/s   (peak RSS %.0f MiB)\n",
                py_s, py_cpu, mbytes / py_cpu, MaxRssKb(RUSAGE_CHILDREN) / 1024.0);
    std::printf("ratio                read %.1fx, ingest + breakdown %.1fx faster than python "
                "json.load alone (CPU; read wall %.1fx)\n",
                py_cpu / read_cpu, py_cpu / total_cpu, py_s / read_s);
  } else {
    std::printf("python3 json.load    failed (status %d)\n", status);
  }
  std::printf("peak RSS             %.0f MiB after the read = %.2fx the file; %.0f MiB after the "
              "breakdown = %.2fx (before read %.0f MiB)\n",
              rss_read / 1024.0, rss_read * 1024.0 / bytes, rss_after / 1024.0,
              rss_after * 1024.0 / bytes, rss_before / 1024.0);
  if (generated) {
    if (std::getenv("RLPROF_BENCH_KEEP") == nullptr) std::filesystem::remove(path);
    Scaling(mb);
  }
  return 0;
}
