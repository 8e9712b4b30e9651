#include "src/sources/cupti_source.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "src/runtime/clock.h"

namespace rlprof::sources {
namespace {

std::atomic<CuptiSource*> g_active{nullptr};
const runtime::CorrelationHooks kHooks{&CuptiSource::PushExternalId, &CuptiSource::PopExternalId};

size_t EnvSize(EnvFn env, const char* name, size_t fallback) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return end != v && n > 0 ? static_cast<size_t>(n) : fallback;
}

const char* DefaultEnv(const char* k) { return std::getenv(k); }

// The runtime API calls that launch device work: enough for launch → kernel flows at level0.
constexpr CUpti_CallbackId kLaunchCbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
};

}  // namespace

CuptiSource::CuptiSource(CuptiSourceOptions o) : opt_(o) {
  if (opt_.env == nullptr) opt_.env = &DefaultEnv;
}

CuptiSource::~CuptiSource() {
  Shutdown();
  CuptiSource* self = this;
  g_active.compare_exchange_strong(self, nullptr);
  for (uint8_t* b : all_buffers_) ::operator delete[](b, std::align_val_t{8});
}

std::string CuptiSource::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

void CuptiSource::SetStatus(std::string s) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_ = std::move(s);
}

void CuptiSource::Off(const std::string& why, bool warn) {
  SetStatus("off: " + why);
  active_.store(false, std::memory_order_release);
  if (told_) return;
  told_ = true;
  std::fprintf(stderr, "rlprof: %s: no device capture: %s; host capture goes on\n",
               warn ? "warning" : "info", why.c_str());
}

bool CuptiSource::Configure(const runtime::SourceContext& ctx) {
  acts_ = config::DeviceActivitiesFor(*ctx.process);
  if (active()) return true;  // a new session in the same process: CUPTI is already set up
  if (!loaded_) {
    if (load_failed_) {
      SetStatus("off: " + load_error_);
      return true;
    }
    if (!api_.Load(opt_.env, &load_error_)) {
      load_failed_ = true;
      Off(load_error_, /*warn=*/false);
      return true;  // stays in the set: the manifest says why there is no device data
    }
    loaded_ = true;
  }
  CuptiSource* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this) && expected != this) {
    Off("another rlprof CUPTI source is active in this process", true);
    return true;
  }
  // One subscriber per process: torch.profiler (Kineto) and nsys subscribe too. Finding CUPTI
  // taken, rlprof keeps its host capture and leaves theirs alone.
  auto noop = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
  CUptiResult r = api_.Subscribe(&subscriber_, noop, nullptr);
  if (r != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    g_active.store(nullptr);
    const bool taken = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    Off(taken ? "another CUPTI subscriber (torch.profiler/Kineto, nsys, …) holds CUPTI"
              : "cuptiSubscribe failed: " + api_.ResultString(r),
        /*warn=*/taken);
    return true;
  }
  if (all_buffers_.empty()) {
    buffer_bytes_ = opt_.buffer_bytes != 0 ? opt_.buffer_bytes
                                           : EnvSize(opt_.env, "RLPROF_CUPTI_BUFFER_KB", 2048) * 1024;
    const size_t n = opt_.buffers != 0 ? opt_.buffers : EnvSize(opt_.env, "RLPROF_CUPTI_BUFFERS", 16);
    all_buffers_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      auto* b = static_cast<uint8_t*>(::operator new[](buffer_bytes_, std::align_val_t{8}));
      std::memset(b, 0, buffer_bytes_);  // pre-faulted: CUPTI's first writes do not page-fault
      all_buffers_.push_back(b);
    }
    pool_ = all_buffers_;
    completed_.reserve(n);
    draining_.reserve(n);
  }
  if ((r = api_.ActivityRegisterCallbacks(&BufferRequested, &BufferCompleted)) != CUPTI_SUCCESS) {
    api_.Unsubscribe(subscriber_);
    subscriber_ = nullptr;
    g_active.store(nullptr);
    Off("cuptiActivityRegisterCallbacks failed: " + api_.ResultString(r), true);
    return true;
  }
  ts_callback_ = api_.ActivityRegisterTimestampCallback != nullptr &&
                 api_.ActivityRegisterTimestampCallback(&Timestamp) == CUPTI_SUCCESS;
  if (!ts_callback_) MeasureOffset();
  if (api_.SetThreadIdType != nullptr) api_.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  SetStatus("on");
  active_.store(true, std::memory_order_release);
  if (acts_.external_correlation) runtime::SetCorrelationHooks(&kHooks);
  return true;
}

uint64_t CuptiSource::Timestamp() { return static_cast<uint64_t>(runtime::MonotonicNowNs()); }

void CuptiSource::MeasureOffset() {
  // The CUPTI reading bracketed by two CLOCK_MONOTONIC readings; the tightest of 16 wins.
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t c = 0;
    const int64_t a = runtime::MonotonicNowNs();
    if (api_.GetTimestamp(&c) != CUPTI_SUCCESS) break;
    const int64_t b = runtime::MonotonicNowNs();
    if (b - a < best_width) {
      best_width = b - a;
      offset_ns_ = a + (b - a) / 2 - static_cast<int64_t>(c);
    }
  }
  offset_error_ns_ = best_width == INT64_MAX ? -1 : (best_width + 1) / 2;
}

bool CuptiSource::EnableKinds(bool on, std::string* error, CUptiResult* result) {
  auto set = [&](CUpti_ActivityKind k) {
    const CUptiResult r = on ? api_.ActivityEnable(k) : api_.ActivityDisable(k);
    if (r != CUPTI_SUCCESS && error != nullptr && error->empty())
      *error = std::string(on ? "cuptiActivityEnable" : "cuptiActivityDisable") + "(" +
               std::to_string(static_cast<int>(k)) + "): " + api_.ResultString(r);
    return r;
  };
  CUptiResult first = CUPTI_SUCCESS;
  auto keep = [&](CUptiResult r) {
    if (first == CUPTI_SUCCESS) first = r;
  };
  if (acts_.kernels) keep(set(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (acts_.memcpy) keep(set(CUPTI_ACTIVITY_KIND_MEMCPY));
  if (acts_.memset) keep(set(CUPTI_ACTIVITY_KIND_MEMSET));
  if (acts_.external_correlation) keep(set(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
  if (acts_.sync) keep(set(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
  if (acts_.driver_api) keep(set(CUPTI_ACTIVITY_KIND_DRIVER));
  if (acts_.overhead) keep(set(CUPTI_ACTIVITY_KIND_OVERHEAD));
  if (acts_.runtime_api || acts_.launch_api) {
    keep(set(CUPTI_ACTIVITY_KIND_RUNTIME));
    // level0: only the launch calls (where the library can filter by callback id).
    if (on && !acts_.runtime_api && api_.ActivityEnableRuntimeApi != nullptr) {
      for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
        api_.ActivityEnableRuntimeApi(cbid, 0);
      for (CUpti_CallbackId cbid : kLaunchCbids) api_.ActivityEnableRuntimeApi(cbid, 1);
    }
  }
  if (result != nullptr) *result = first;
  return first == CUPTI_SUCCESS;
}

void CuptiSource::Start(uint32_t gen) {
  if (!active()) return;
  {
    std::lock_guard<std::mutex> lock(win_mu_);
    windows_.emplace_back(gen, runtime::MonotonicNowNs());
    if (windows_.size() > 8) windows_.erase(windows_.begin());
  }
  std::string error;
  CUptiResult r = CUPTI_SUCCESS;
  if (!EnableKinds(true, &error, &r)) {
    EnableKinds(false, nullptr);
    // Kineto / nsys may hold the activity API without having subscribed first.
    Off(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            ? "another CUPTI client holds the activity API (" + error + ")"
            : error,
        true);
    return;
  }
  enabled_.store(true, std::memory_order_release);
}

void CuptiSource::Stop(uint32_t) {
  if (!enabled_.exchange(false)) return;
  EnableKinds(false, nullptr);  // no flush here: the writer thread flushes (Drain)
}

void CuptiSource::BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  CuptiSource* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->pool_mu_);
  if (s->pool_.empty()) {
    s->starved_.fetch_add(1, std::memory_order_relaxed);  // CUPTI drops (and counts) the records
    return;
  }
  *buffer = s->pool_.back();
  s->pool_.pop_back();
  *size = s->buffer_bytes_;
}

void CuptiSource::BufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                                  size_t valid) {
  CuptiSource* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr || buffer == nullptr) return;
  size_t dropped = 0;
  if (s->api_.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped != 0)
    s->cupti_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  s->buffers_completed_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(s->pool_mu_);
  s->completed_.push_back({buffer, valid});  // capacity reserved: every buffer fits
}

uint32_t CuptiSource::GenFor(int64_t ts) const {
  std::lock_guard<std::mutex> lock(win_mu_);
  for (size_t i = windows_.size(); i-- > 0;)
    if (windows_[i].second <= ts || i == 0) return windows_[i].first;
  return 0;
}

void CuptiSource::ConvertBuffer(runtime::SourceSink& sink, const Buffer& b) {
  CUpti_Activity* rec = nullptr;
  const int64_t off = ts_callback_ ? 0 : offset_ns_;
  // Records of one buffer are nearly always of one window: resolve the window once per change.
  uint32_t gen = 0;
  int64_t gen_from = INT64_MAX, gen_to = INT64_MIN;
  std::map<uint32_t, uint64_t> local;
  while (api_.ActivityGetNextRecord(b.data, b.valid, &rec) == CUPTI_SUCCESS) {
    format::Event e;
    if (!conv_->Convert(rec, off, &e)) continue;
    if (e.ts_ns < gen_from || e.ts_ns >= gen_to) {
      gen = GenFor(e.ts_ns);
      std::lock_guard<std::mutex> lock(win_mu_);
      gen_from = INT64_MIN;
      gen_to = INT64_MAX;
      for (size_t i = 0; i < windows_.size(); ++i) {
        if (windows_[i].first != gen) continue;
        gen_from = i == 0 ? INT64_MIN : windows_[i].second;
        gen_to = i + 1 < windows_.size() ? windows_[i + 1].second : INT64_MAX;
      }
    }
    if (sink.Emit(gen, e, runtime::TimeBase::kMonotonicNs)) {
      ++local[gen];
    } else {
      std::lock_guard<std::mutex> lock(counters_mu_);
      ++late_;
    }
  }
  std::lock_guard<std::mutex> lock(counters_mu_);
  for (auto& [g, n] : local) emitted_[g] += n;
}

void CuptiSource::Drain(runtime::SourceSink& sink, uint32_t final_gen) {
  if (!loaded_) return;
  // The window's last records: CUPTI hands over even partly filled buffers (on this thread).
  if (final_gen != 0 && active()) api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (completed_.empty()) return;
    draining_.swap(completed_);
  }
  if (conv_ == nullptr) conv_ = std::make_unique<CuptiRecordConverter>(&sink, &api_);
  conv_->set_sink(&sink);
  for (const Buffer& b : draining_) ConvertBuffer(sink, b);
  std::lock_guard<std::mutex> lock(pool_mu_);
  for (const Buffer& b : draining_) pool_.push_back(b.data);
  draining_.clear();
}

runtime::SourceCounters CuptiSource::Counters(uint32_t gen) {
  runtime::SourceCounters c;
  const std::string status = this->status();
  c.emplace_back("status", status);
  if (!loaded_) return c;
  c.emplace_back("library", api_.path);
  c.emplace_back("cupti_version", static_cast<int64_t>(api_.version));
  if (status != "on" && subscriber_ == nullptr) return c;
  std::vector<std::string> acts = acts_.Names();
  std::string joined;
  for (const auto& a : acts) joined += (joined.empty() ? "" : ",") + a;
  c.emplace_back("activities", joined);
  c.emplace_back("clock", ts_callback_ ? "timestamp callback" : "measured offset");
  c.emplace_back("clock_error_ns", ts_callback_ ? int64_t{0} : offset_error_ns_);
  const CuptiCounts now = conv_ ? conv_->counts() : CuptiCounts{};
  auto delta = [&](const char* key, uint64_t a, uint64_t b) { c.emplace_back(key, static_cast<int64_t>(a - b)); };
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    c.emplace_back("records", static_cast<int64_t>(emitted_[gen]));
    emitted_.erase(gen);
    c.emplace_back("records_outside_windows", static_cast<int64_t>(late_));
  }
  delta("kernels", now.kernels, reported_.kernels);
  delta("nccl_kernels", now.nccl_kernels, reported_.nccl_kernels);
  delta("memcpy", now.memcpy, reported_.memcpy);
  delta("memset", now.memset, reported_.memset);
  delta("sync", now.sync, reported_.sync);
  delta("runtime_api", now.runtime_api, reported_.runtime_api);
  delta("driver_api", now.driver_api, reported_.driver_api);
  delta("overhead", now.overhead, reported_.overhead);
  delta("graphs", now.graphs, reported_.graphs);
  delta("external_correlation", now.external_correlation, reported_.external_correlation);
  delta("bad_timestamps", now.bad_time, reported_.bad_time);
  reported_ = now;
  const uint64_t starved = starved_.load(), dropped = cupti_dropped_.load();
  delta("buffer_starved", starved, reported_starved_);
  delta("dropped_by_cupti", dropped, reported_dropped_);
  reported_starved_ = starved;
  reported_dropped_ = dropped;
  return c;
}

void CuptiSource::Shutdown() {
  if (!active() && subscriber_ == nullptr) return;
  runtime::SetCorrelationHooks(nullptr);
  if (enabled_.exchange(false)) EnableKinds(false, nullptr);
  // Every kind a level may have enabled, so that the next CUPTI client starts clean.
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                               CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                               CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
    api_.ActivityDisable(k);
  api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (const Buffer& b : completed_) pool_.push_back(b.data);
    completed_.clear();
  }
  if (subscriber_ != nullptr) api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
  active_.store(false, std::memory_order_release);
  SetStatus("on");  // what it was during the session; Configure sets it again
  {
    std::lock_guard<std::mutex> lock(win_mu_);
    windows_.clear();
  }
  conv_.reset();  // track and string ids belong to the session that ended
  CuptiSource* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

void CuptiSource::PushExternalId(uint64_t id) noexcept {
  CuptiSource* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr || !s->enabled_.load(std::memory_order_relaxed) ||
      s->api_.ActivityPushExternalCorrelationId == nullptr)
    return;
  s->api_.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiSource::PopExternalId() noexcept {
  CuptiSource* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr || !s->enabled_.load(std::memory_order_relaxed) ||
      s->api_.ActivityPopExternalCorrelationId == nullptr)
    return;
  uint64_t last = 0;
  s->api_.ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

}  // namespace rlprof::sources
