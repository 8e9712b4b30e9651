// A multi-threaded producer/consumer pipeline with real matrix multiplications, instrumented
// with rlprof's C++ API and driven by pipeline.yaml: an RL-shaped loop of steps, each with a
// "rollout_generate" stage (a producer thread makes batches, worker threads multiply them)
// and an "actor_update" stage (micro-batches on the main thread). Only the steps the config
// selects are captured.
//
//   cpp_pipeline --config examples/cpp_pipeline/pipeline.yaml [--steps 5] [--workers 3]
//                [--size 96] [--override rlprof.save_path=/tmp/out] [--run-id demo]
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlprof/rlprof.hpp"

namespace {

using Matrix = std::vector<float>;

Matrix Multiply(const Matrix& a, const Matrix& b, int n) {
  RLPROF_RANGE("matmul");
  Matrix c(static_cast<size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const float aik = a[static_cast<size_t>(i) * n + k];
      for (int j = 0; j < n; ++j) c[static_cast<size_t>(i) * n + j] += aik * b[static_cast<size_t>(k) * n + j];
    }
  return c;
}

Matrix Random(std::mt19937& rng, int n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Matrix m(static_cast<size_t>(n) * n);
  for (float& x : m) x = d(rng);
  return m;
}

// A bounded queue between the producer and the workers.
class Queue {
 public:
  void Push(std::optional<std::pair<Matrix, Matrix>> item) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [this] { return items_.size() < 4; });
    items_.push_back(std::move(item));
    not_empty_.notify_one();
  }
  std::optional<std::pair<Matrix, Matrix>> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [this] { return !items_.empty(); });
    auto item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::optional<std::pair<Matrix, Matrix>>> items_;
};

// The rollout stage: one producer, `workers` consumers, `batches` batches.
double Rollout(int workers, int batches, int n, std::mt19937& rng) {
  Queue queue;
  std::mutex sum_mu;
  double checksum = 0;
  std::thread producer([&] {
    rlprof::SetThreadName("producer");
    for (int b = 0; b < batches; ++b) {
      RLPROF_RANGE("produce");
      queue.Push(std::make_pair(Random(rng, n), Random(rng, n)));
      rlprof::Counter("queued batches", b + 1);
    }
    for (int w = 0; w < workers; ++w) queue.Push(std::nullopt);
  });
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      rlprof::SetThreadName("worker " + std::to_string(w));
      while (auto item = queue.Pop()) {
        // A decode-like request that completes on this thread: an async range.
        const uint64_t id = rlprof::RangeStart("request");
        Matrix c = Multiply(item->first, item->second, n);
        rlprof::RangeEnd(id);
        std::lock_guard<std::mutex> lock(sum_mu);
        checksum += c[0];
      }
    });
  producer.join();
  for (auto& t : pool) t.join();
  return checksum;
}

// The update stage: micro-batches on the calling thread.
double Update(int micro_batches, int n, std::mt19937& rng) {
  double loss = 0;
  Matrix w = Random(rng, n);
  for (int mb = 0; mb < micro_batches; ++mb) {
    {
      RLPROF_RANGE("forward");
      w = Multiply(w, Random(rng, n), n);
    }
    {
      RLPROF_RANGE("backward");
      loss = 0;
      for (float x : w) loss += static_cast<double>(x) * x;
      loss /= static_cast<double>(w.size());
      for (float& x : w) x *= 0.5f;
    }
    rlprof::Counter("loss", loss);
    rlprof::SubStep(rlprof::config::SubStepKind::kMicroBatch);
  }
  return loss;
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --config FILE [--override KEY=VALUE]... [--steps N] [--workers N]\n"
               "          [--size N] [--run-id ID]\n",
               argv0);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config;
  std::vector<std::string> overrides;
  int steps = 5, workers = 3, size = 96;
  rlprof::SessionOptions options;
  options.roles = std::vector<std::string>{"actor", "rollout"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--config" && has_value) config = argv[++i];
    else if (a == "--override" && has_value) overrides.push_back(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::atoi(argv[++i]);
    else if (a == "--workers" && has_value) workers = std::atoi(argv[++i]);
    else if (a == "--size" && has_value) size = std::atoi(argv[++i]);
    else if (a == "--run-id" && has_value) options.run_id = argv[++i];
    else return Usage(argv[0]);
  }
  if (config.empty() || steps < 1 || workers < 1 || size < 8) return Usage(argv[0]);

  std::string error;
  if (!rlprof::InitFromConfig(config, overrides, options, &error))
    std::fprintf(stderr, "%s\n(continuing without profiling)\n", error.c_str());
  rlprof::SetThreadName("trainer");

  std::mt19937 rng(42);
  double checksum = 0;
  for (int step = 1; step <= steps; ++step) {
    rlprof::BeginStep(step);
    {
      auto stage = rlprof::Annotate("rollout", "rollout_generate");
      checksum += Rollout(workers, 12, size, rng);
    }
    {
      auto stage = rlprof::Annotate("actor", "actor_update");
      checksum += Update(4, size, rng);
    }
    rlprof::EndStep();
    std::printf("step %d done%s\n", step, rlprof::DefaultSession() && rlprof::DefaultSession()->enabled() ? "" : " (profiling off)");
  }
  if (rlprof::Session* s = rlprof::DefaultSession()) {
    s->Flush();
    for (const std::string& dir : s->Captures()) std::printf("capture: %s\n", dir.c_str());
  }
  rlprof::Shutdown();
  std::printf("checksum %.6f\n", checksum);
  return 0;
}
