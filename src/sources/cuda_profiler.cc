#include "src/sources/cuda_profiler.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace rlprof::sources {

const char* CudaProfilerSource::Env(const char* k) const {
  return env_ != nullptr ? env_(k) : std::getenv(k);
}

void* OpenCudart(const char* (*env)(const char*), std::string* library, std::string* tried) {
  const char* explicit_lib = env != nullptr ? env("RLPROF_CUDART_LIBRARY") : std::getenv("RLPROF_CUDART_LIBRARY");
  std::vector<std::string> names = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  if (explicit_lib != nullptr && *explicit_lib != '\0') names = {explicit_lib};
  tried->clear();
  for (const std::string& n : names) *tried += (tried->empty() ? "" : ", ") + n;
  // A libcudart the process already loaded (torch's), whichever name it answers to, before any
  // other: its profiler state is the one nsys sees, and a second CUDA runtime would make a
  // context of its own.
  for (const std::string& n : names)
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_NOLOAD); h != nullptr) {
      *library = n;
      return h;
    }
  for (const std::string& n : names)
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL); h != nullptr) {
      *library = n;
      return h;
    }
  return nullptr;
}

CudartProfilerApi LoadCudartProfiler(const char* (*env)(const char*)) {
  CudartProfilerApi a;
  std::string tried;
  a.handle = OpenCudart(env, &a.library, &tried);
  if (a.handle != nullptr) {
    a.start = reinterpret_cast<int (*)()>(dlsym(a.handle, "cudaProfilerStart"));
    a.stop = reinterpret_cast<int (*)()>(dlsym(a.handle, "cudaProfilerStop"));
  }
  if (a.start == nullptr || a.stop == nullptr) {
    a.start = a.stop = nullptr;
    a.status = a.handle == nullptr ? "off: libcudart not found (tried " + tried + ")"
                                   : "off: " + a.library + " has no cudaProfilerStart/Stop";
  } else {
    a.status = "on: " + a.library;
  }
  return a;
}

bool CudaProfilerSource::Configure(const runtime::SourceContext& ctx) {
  if (ctx.plan == nullptr || ctx.plan->tool != config::Tool::kNsys) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (handle_ == nullptr) {
    CudartProfilerApi a = LoadCudartProfiler(env_);
    handle_ = a.handle;
    start_ = a.start;
    stop_ = a.stop;
    library_ = std::move(a.library);
    status_ = std::move(a.status);
    if (start_ == nullptr)
      std::fprintf(stderr, "rlprof: info: tool nsys: %s; capture windows do not drive nsys\n",
                   status_.c_str());
  }
  return true;  // on, or a counted no-op
}

void CudaProfilerSource::Start(uint32_t) {
  if (start_ == nullptr) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int rc = start_();
  starts_.fetch_add(1, std::memory_order_relaxed);
  running_ = rc == 0;
  if (rc != 0) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    last_error_.store(rc, std::memory_order_relaxed);
  }
}

void CudaProfilerSource::Stop(uint32_t) {
  if (stop_ == nullptr || !running_) return;
  running_ = false;
  const int rc = stop_();
  stops_.fetch_add(1, std::memory_order_relaxed);
  if (rc != 0) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    last_error_.store(rc, std::memory_order_relaxed);
  }
}

runtime::SourceCounters CudaProfilerSource::Counters(uint32_t) {
  std::string status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = status_;
  }
  runtime::SourceCounters c = {{"status", status},
                               {"starts", starts_.load()},
                               {"stops", stops_.load()},
                               {"skipped_windows", skipped_.load()},
                               {"errors", errors_.load()}};
  if (errors_.load() > 0) c.push_back({"last_error", last_error_.load()});
  return c;
}

}  // namespace rlprof::sources
