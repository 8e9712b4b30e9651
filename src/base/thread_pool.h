// A small fixed-size thread pool for coarse-grained work (one task per input file in
// `rlprof analyse`). Not for the hot path: tasks are std::function, queued under a mutex.
//
//   base::ThreadPool pool(4);
//   for (auto& in : inputs) pool.Submit([&, in] { Analyse(in); });
//   pool.Wait();  // blocks until every submitted task has finished
//
// ParallelFor(n, jobs, fn) runs fn(0..n-1) on up to `jobs` threads and returns when all are
// done; with jobs <= 1 it runs inline on the calling thread (deterministic, no threads).
//
// Thread-safety: Submit and Wait may be called from any thread. Tasks must not throw (an
// escaping exception terminates, as for std::thread). The destructor waits for queued tasks.
#ifndef RLPROF_SRC_BASE_THREAD_POOL_H_
#define RLPROF_SRC_BASE_THREAD_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rlprof::base {

class ThreadPool {
 public:
  // threads == 0 uses std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  // Blocks until the queue is empty and no task is running.
  void Wait();
  size_t size() const { return workers_.size(); }

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Calls fn(i) for i in [0, n) on min(jobs, n) threads; inline when jobs <= 1 or n <= 1.
void ParallelFor(size_t n, size_t jobs, const std::function<void(size_t)>& fn);

}  // namespace rlprof::base

#endif  // RLPROF_SRC_BASE_THREAD_POOL_H_
