#include "src/sources/cupti_source.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/syscall.h>
#include <unistd.h>

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
  Tell(why, warn);
}

void CuptiSource::Tell(const std::string& why, bool warn) {
  if (told_.exchange(true)) return;
  std::fprintf(stderr, "rlprof: %s: no device capture: %s; host capture goes on\n",
               warn ? "warning" : "info", why.c_str());
}

void CuptiSource::ApplyOmit() {
  const char* v = opt_.env("RLPROF_CUPTI_OMIT");
  if (v == nullptr || *v == '\0') return;
  std::string list(v), bad;
  size_t from = 0;
  while (from <= list.size()) {
    size_t comma = list.find(',', from);
    if (comma == std::string::npos) comma = list.size();
    const std::string k = list.substr(from, comma - from);
    from = comma + 1;
    if (k.empty()) continue;
    if (bool* f = acts_.Field(k); f != nullptr) *f = false;
    else bad += (bad.empty() ? "" : ", ") + k;
  }
  if (acts_.runtime_api) acts_.launch_api = true;  // omitting launch_api alone keeps level1's calls
  if (!bad.empty() && !omit_warned_) {
    omit_warned_ = true;
    std::fprintf(stderr, "rlprof: warning: RLPROF_CUPTI_OMIT=%s: ignored %s (allowed: %s)\n", v, bad.c_str(),
                 config::DeviceActivities::AllNames());
  }
}

bool CuptiSource::Configure(const runtime::SourceContext& ctx) {
  acts_ = config::DeviceActivitiesFor(*ctx.process);
  ApplyOmit();
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
  std::lock_guard<std::mutex> claim(claim_mu_);
  std::string why;
  CUptiResult r = CUPTI_SUCCESS;
  if (!Claim(&why, &r)) {
    g_active.store(nullptr);
    Off(why, /*warn=*/r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_SUCCESS);
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
  ts_callback_ = api_.ActivityRegisterTimestampCallback != nullptr &&
                 api_.ActivityRegisterTimestampCallback(&Timestamp) == CUPTI_SUCCESS;
  if (!ts_callback_) MeasureOffset();
  if (api_.SetThreadIdType != nullptr) api_.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  if (const char* dir = opt_.env("RLPROF_CUPTI_RECORD_DIR"); dir != nullptr) record_dir_ = dir;
  // CUPTI stays free between windows: each window claims it again (Claim) and the writer
  // releases it once the window's records are flushed (ReleaseIfIdle). Kineto subscribes once,
  // at torch.profiler's first profile, and never retries: a subscription held across it would
  // leave every torch.profiler trace of the process without device activity.
  api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
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
  if (acts_.runtime_api || (acts_.launch_api && api_.ActivityEnableRuntimeApi == nullptr)) {
    // level1 (every runtime call), or level0 with a CUPTI older than per-call selection: every
    // call is recorded and the launches are picked out when records are converted.
    keep(set(CUPTI_ACTIVITY_KIND_RUNTIME));
  } else if (acts_.launch_api) {
    // level0: the launch calls alone, selected by callback id *without* enabling the RUNTIME
    // kind — CUPTI's documented way to trace a small set of runtime APIs. Enabling the kind and
    // then deselecting the other calls (how level0 did it until 2026-11-28) still had CUPTI
    // wrap every runtime call PyTorch makes (several per operator): on an H200 the launch
    // records then cost ≈ 13 ms of a ≈ 100 ms GRPO step, as much as kernels, copies, sets and
    // operators together (bench/cost.py --device cuda, modes opsdev and devkern).
    for (CUpti_CallbackId cbid : kLaunchCbids) {
      const CUptiResult r = api_.ActivityEnableRuntimeApi(cbid, on ? 1 : 0);
      if (r != CUPTI_SUCCESS && error != nullptr && error->empty())
        *error = std::string("cuptiActivityEnableRuntimeApi(") + std::to_string(cbid) + ", " +
                 (on ? "1" : "0") + "): " + api_.ResultString(r);
      keep(r);
    }
  }
  if (result != nullptr) *result = first;
  return first == CUPTI_SUCCESS;
}

bool CuptiSource::Claim(std::string* why, CUptiResult* subscribe_result) {
  // claim_mu_ held. Still claimed: the previous window's records are not flushed yet.
  release_after_flush_ = false;
  if (subscriber_ != nullptr) return true;
  auto noop = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
  CUptiResult r = api_.Subscribe(&subscriber_, noop, nullptr);
  if (subscribe_result != nullptr) *subscribe_result = r;
  if (r != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    *why = api_.SubscribeFailure(r);
    return false;
  }
  // Another client may have registered its own buffer (and timestamp) callbacks while CUPTI was
  // free: CUPTI keeps the last ones registered.
  if ((r = api_.ActivityRegisterCallbacks(&BufferRequested, &BufferCompleted)) != CUPTI_SUCCESS) {
    api_.Unsubscribe(subscriber_);
    subscriber_ = nullptr;
    *why = "cuptiActivityRegisterCallbacks failed: " + api_.ResultString(r);
    return false;
  }
  if (ts_callback_) api_.ActivityRegisterTimestampCallback(&Timestamp);
  return true;
}

void CuptiSource::ReleaseIfIdle() {
  std::lock_guard<std::mutex> lock(claim_mu_);
  if (!release_after_flush_ || enabled_.load(std::memory_order_acquire) || subscriber_ == nullptr) return;
  api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
  release_after_flush_ = false;
}

void CuptiSource::SetWindowStatus(uint32_t gen, std::string s) {
  std::lock_guard<std::mutex> lock(status_mu_);
  window_status_[gen] = std::move(s);
  while (window_status_.size() > 64) window_status_.erase(window_status_.begin());
}

void CuptiSource::Start(uint32_t gen) {
  if (!active()) return;
  {
    std::lock_guard<std::mutex> lock(win_mu_);
    windows_.emplace_back(gen, runtime::MonotonicNowNs());
    if (windows_.size() > 8) windows_.erase(windows_.begin());
  }
  if (!record_dir_.empty()) start_tid_.store(static_cast<uint32_t>(syscall(SYS_gettid)));
  std::lock_guard<std::mutex> lock(claim_mu_);
  std::string why;
  if (!Claim(&why)) {
    // Taken since the session began (torch.profiler's first profile, nsys): this window has no
    // device data, and says so; the next window tries again.
    SetWindowStatus(gen, "off: " + why);
    Tell(why, true);
    return;
  }
  std::string error;
  CUptiResult r = CUPTI_SUCCESS;
  if (!EnableKinds(true, &error, &r)) {
    EnableKinds(false, nullptr);
    // Kineto / nsys may hold the activity API without having subscribed.
    const std::string why_off = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                    ? "another CUPTI client holds the activity API (" + error + ")"
                                    : error;
    SetWindowStatus(gen, "off: " + why_off);
    Tell(why_off, true);
    // Released by the writer after this window's final flush (not here: a claim kept from the
    // previous window still has that window's records to flush).
    release_after_flush_ = true;
    return;
  }
  SetWindowStatus(gen, "on");
  enabled_.store(true, std::memory_order_release);
}

void CuptiSource::Stop(uint32_t) {
  std::lock_guard<std::mutex> lock(claim_mu_);
  if (!enabled_.exchange(false)) return;
  EnableKinds(false, nullptr);  // no flush here: the writer thread flushes (Drain), then releases
  release_after_flush_ = true;
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
  std::map<uint32_t, GenTally> local;
  GenTally* tally = &local[0];  // records before the first resolved one (external correlations)
  const bool recording = !record_dir_.empty();
  while (api_.ActivityGetNextRecord(b.data, b.valid, &rec) == CUPTI_SUCCESS) {
    format::Event e;
    if (!conv_->Convert(rec, off, &e)) {
      CountRecord(rec, false, &tally->counts);
      if (recording) RecordText(rec, gen, off);  // external correlations: the window at hand
      continue;
    }
    if (e.ts_ns < gen_from || e.ts_ns >= gen_to) {
      gen = GenFor(e.ts_ns);
      tally = &local[gen];
      std::lock_guard<std::mutex> lock(win_mu_);
      gen_from = INT64_MIN;
      gen_to = INT64_MAX;
      for (size_t i = 0; i < windows_.size(); ++i) {
        if (windows_[i].first != gen) continue;
        gen_from = i == 0 ? INT64_MIN : windows_[i].second;
        gen_to = i + 1 < windows_.size() ? windows_[i + 1].second : INT64_MAX;
      }
    }
    CountRecord(rec, conv_->last_was_collective(), &tally->counts);
    if (recording) RecordText(rec, gen, off);
    if (EmitOrDefer(sink, gen, e)) ++tally->emitted;
  }
  // Leading external correlations belong to the buffer's first window.
  if (auto z = local.find(0); z != local.end() && local.size() > 1) {
    std::next(z)->second.counts += z->second.counts;
    local.erase(z);
  }
  std::lock_guard<std::mutex> lock(counters_mu_);
  for (auto& [g, t] : local) {
    GenTally& to = per_gen_[g];
    to.emitted += t.emitted;
    to.counts += t.counts;
  }
}

bool CuptiSource::EmitOrDefer(runtime::SourceSink& sink, uint32_t gen, const format::Event& e) {
  if (sink.Emit(gen, e, runtime::TimeBase::kMonotonicNs)) return true;
  // The next window's first records, flushed with the previous window's last ones before the
  // writer has opened its capture: kept until it has.
  if (gen > finished_gen_ && deferred_.size() < kMaxDeferred) {
    deferred_.emplace_back(gen, e);
    return false;
  }
  std::lock_guard<std::mutex> lock(counters_mu_);
  ++late_;
  return false;
}

void CuptiSource::RecordText(const CUpti_Activity* r, uint32_t gen, int64_t offset) {
  int64_t origin = 0;
  {
    std::lock_guard<std::mutex> lock(win_mu_);
    if (windows_.empty()) return;
    auto w = windows_.end() - 1;  // gen 0 (not yet resolved): the latest window
    for (auto it = windows_.begin(); it != windows_.end(); ++it)
      if (it->first == gen) w = it;
    gen = w->first;
    origin = w->second;
  }
  std::lock_guard<std::mutex> lock(record_mu_);
  std::FILE*& f = record_files_[gen];
  if (f == nullptr) {
    const std::string path = record_dir_ + "/cupti-" + std::to_string(getpid()) + "-w" + std::to_string(gen) + ".records";
    f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "rlprof: warning: RLPROF_CUPTI_RECORD_DIR: cannot write %s; not recording\n", path.c_str());
      record_files_.erase(gen);
      record_dir_.clear();  // the writer thread alone reads it from here on
      return;
    }
    std::fprintf(f, "# CUPTI records of capture window %u, recorded by rlprof's CUPTI source (%s, CUPTI API %u)\n"
                 "# t, d: ns from the window's opening on rlprof's clock (%s); format: test/data/cupti/README.md\n",
                 gen, api_.path.c_str(), api_.version, ts_callback_ ? "timestamp callback" : "measured offset");
  }
  record_line_.clear();
  if (AppendRecordText(r, offset, origin, start_tid_.load(), &record_line_))
    std::fwrite(record_line_.data(), 1, record_line_.size(), f);
}

void CuptiSource::CloseRecording(uint32_t gen) {
  std::lock_guard<std::mutex> lock(record_mu_);
  auto it = record_files_.find(gen);
  if (it == record_files_.end()) return;
  const uint64_t dropped = cupti_dropped_.load();
  if (dropped != recorded_dropped_) std::fprintf(it->second, "dropped %llu\n",
                                                 static_cast<unsigned long long>(dropped - recorded_dropped_));
  recorded_dropped_ = dropped;
  std::fclose(it->second);
  record_files_.erase(it);
}

void CuptiSource::Drain(runtime::SourceSink& sink, uint32_t final_gen) {
  if (!loaded_) return;
  RetryDeferred(sink);  // their capture may have opened since
  // The window's last records: CUPTI hands over even partly filled buffers (on this thread).
  // Only while rlprof holds CUPTI: unclaimed, its buffers may be another client's. The flush runs
  // without claim_mu_ (a next window's Start must not wait for it): only this thread releases
  // the claim (ReleaseIfIdle), so it cannot end meanwhile.
  if (final_gen != 0 && active()) {
    bool claimed;
    {
      std::lock_guard<std::mutex> lock(claim_mu_);
      claimed = subscriber_ != nullptr;
    }
    if (claimed) api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (completed_.empty()) {
      if (final_gen != 0) FinishWindow(sink, final_gen);
      return;
    }
    draining_.swap(completed_);
  }
  if (conv_ == nullptr) conv_ = std::make_unique<CuptiRecordConverter>(&sink, &api_);
  conv_->set_sink(&sink);
  for (const Buffer& b : draining_) ConvertBuffer(sink, b);
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (const Buffer& b : draining_) pool_.push_back(b.data);
    draining_.clear();
  }
  if (final_gen != 0) FinishWindow(sink, final_gen);
}

void CuptiSource::RetryDeferred(runtime::SourceSink& sink) {
  if (deferred_.empty()) return;
  std::vector<std::pair<uint32_t, format::Event>> again;
  again.swap(deferred_);
  std::map<uint32_t, uint64_t> local;
  for (const auto& [gen, e] : again)
    if (EmitOrDefer(sink, gen, e)) ++local[gen];
  std::lock_guard<std::mutex> lock(counters_mu_);
  for (auto& [g, n] : local) per_gen_[g].emitted += n;
}

void CuptiSource::FinishWindow(runtime::SourceSink& sink, uint32_t final_gen) {
  // Records of this window or an earlier one that no capture took are late from here on.
  finished_gen_ = std::max(finished_gen_, final_gen);
  RetryDeferred(sink);
  ReleaseIfIdle();  // the window's records are flushed: CUPTI is free until the next window
}

runtime::SourceCounters CuptiSource::Counters(uint32_t gen) {
  runtime::SourceCounters c;
  std::string status = this->status();
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    if (auto it = window_status_.find(gen); it != window_status_.end()) {
      if (status == "on") status = it->second;
      window_status_.erase(it);
    }
  }
  c.emplace_back("status", status);
  if (!loaded_) return c;
  c.emplace_back("library", api_.path);
  c.emplace_back("cupti_version", static_cast<int64_t>(api_.version));
  c.emplace_back("library_loaded_by", api_.already_loaded ? "the process" : "rlprof");
  if (status != "on") return c;
  std::vector<std::string> acts = acts_.Names();
  std::string joined;
  for (const auto& a : acts) joined += (joined.empty() ? "" : ",") + a;
  c.emplace_back("activities", joined);
  c.emplace_back("clock", ts_callback_ ? "timestamp callback" : "measured offset");
  c.emplace_back("clock_error_ns", ts_callback_ ? int64_t{0} : offset_error_ns_);
  GenTally t;
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    if (auto it = per_gen_.find(gen); it != per_gen_.end()) {
      t = it->second;
      per_gen_.erase(it);
    }
    c.emplace_back("records", static_cast<int64_t>(t.emitted));
    c.emplace_back("records_outside_windows", static_cast<int64_t>(late_));
  }
  auto delta = [&](const char* key, uint64_t a, uint64_t b) { c.emplace_back(key, static_cast<int64_t>(a - b)); };
  auto count = [&](const char* key, uint64_t n) { c.emplace_back(key, static_cast<int64_t>(n)); };
  count("kernels", t.counts.kernels);
  count("nccl_kernels", t.counts.nccl_kernels);
  count("memcpy", t.counts.memcpy);
  count("memset", t.counts.memset);
  count("sync", t.counts.sync);
  count("runtime_api", t.counts.runtime_api);
  count("driver_api", t.counts.driver_api);
  count("overhead", t.counts.overhead);
  count("graphs", t.counts.graphs);
  count("external_correlation", t.counts.external_correlation);
  const uint64_t bad = conv_ ? conv_->counts().bad_time : 0;  // per process: since the last report
  delta("bad_timestamps", bad, reported_bad_time_);
  reported_bad_time_ = bad;
  const uint64_t starved = starved_.load(), dropped = cupti_dropped_.load();
  delta("buffer_starved", starved, reported_starved_);
  delta("dropped_by_cupti", dropped, reported_dropped_);
  reported_starved_ = starved;
  reported_dropped_ = dropped;
  CloseRecording(gen);
  return c;
}

void CuptiSource::Shutdown() {
  std::lock_guard<std::mutex> claim(claim_mu_);
  if (!active() && subscriber_ == nullptr) return;
  runtime::SetCorrelationHooks(nullptr);
  if (enabled_.exchange(false)) EnableKinds(false, nullptr);
  if (subscriber_ != nullptr) {
    // Still claimed (a window whose records the writer did not flush): every kind a level may
    // have enabled goes off, so that the next CUPTI client starts clean. Unclaimed, CUPTI may be
    // another client's now: rlprof leaves it alone.
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                 CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                 CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
      api_.ActivityDisable(k);
    api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    api_.Unsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (const Buffer& b : completed_) pool_.push_back(b.data);
    completed_.clear();
  }
  release_after_flush_ = false;
  active_.store(false, std::memory_order_release);
  SetStatus("on");  // what it was during the session; Configure sets it again
  {
    std::lock_guard<std::mutex> lock(win_mu_);
    windows_.clear();
  }
  conv_.reset();  // track and string ids belong to the session that ended
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    late_ += deferred_.size();  // no capture of this session will take them now
  }
  deferred_.clear();
  finished_gen_ = 0;
  {
    std::lock_guard<std::mutex> lock(record_mu_);
    for (auto& [gen, f] : record_files_) std::fclose(f);
    record_files_.clear();
  }
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
