// The CUPTI activity source: the GPU timeline of a capture window — kernels, copies, memsets,
// synchronisation, runtime / driver API calls, CUPTI overhead — from NVIDIA's CUPTI activity API,
// loaded at run time (cupti_api.h) so that nothing links CUDA. A runtime::Source (source.h):
// the session runs it when the plan asks for device data (config::DeviceActivitiesFor).
//
//   runtime::SourceRegistry::Get().Register(std::make_shared<sources::CuptiSource>());
//   // (done once per process by the rlprof_cupti_source object library: cupti_register.cc)
//
// Lifecycle: Configure loads libcupti, subscribes (to learn whether another subscriber —
// torch.profiler/Kineto, nsys — holds CUPTI: then it stays off, warns once and says so in the
// manifest), registers the buffer callbacks and the timestamp callback (device times on
// rlprof's CLOCK_MONOTONIC timeline; else a measured offset, its error in the manifest),
// allocates the buffer pool and unsubscribes again. rlprof holds CUPTI only from a window's
// opening until its records are flushed: Start claims it (subscribes, registers its callbacks
// again — another client may have registered its own meanwhile) and enables the activity kinds
// of the plan's level; Stop disables them (the only CUPTI calls on the training thread: no flush
// there). The writer thread's final Drain of a window forces CUPTI's flush, converts every
// completed buffer (cupti_records.h), hands the buffers back to the pool and, unless the next
// window has opened, unsubscribes. So torch.profiler (whose Kineto subscribes once, at its first
// profile, and never retries) and nsys find CUPTI free between rlprof's windows; a window
// opening while another client holds CUPTI has no device data, its manifest says why
// (`sources.cupti.status`: "off: another CUPTI subscriber …"), a warning is printed once, and
// the next window tries again. Shutdown releases a claim still held.
//
// Back-to-back windows: the forced flush of window N's final drain also brings window N+1's
// first records, before the writer has processed N+1's Open; they wait (deferred_) for it.
// Buffers: `buffers` × `buffer_bytes`, allocated in Configure and reused; CUPTI's request
// callback (on whatever thread fills a buffer, possibly the training thread) only pops one
// from the pool. An empty pool hands CUPTI nothing: CUPTI drops those records; both the
// starvation and CUPTI's dropped-record counts go into the manifest (sources.cupti).
// Recording: with $RLPROF_CUPTI_RECORD_DIR set, the writer thread also writes every record it
// converts, in the fake CUPTI's text format (AppendRecordText), to
// DIR/cupti-<pid>-w<window>.records — real records to replay in tests (test/data/cupti/README.md);
// a diagnostic, off by default, never on the training thread.
// Thread-safety: one instance is active per process (CUPTI's callbacks are global); the pool and
// the completed queue are under their own mutex; conversion runs on the writer thread only.
#ifndef RLPROF_SRC_SOURCES_CUPTI_SOURCE_H_
#define RLPROF_SRC_SOURCES_CUPTI_SOURCE_H_

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/config/device.h"
#include "src/runtime/source.h"
#include "src/sources/cupti_api.h"
#include "src/sources/cupti_records.h"

namespace rlprof::sources {

struct CuptiSourceOptions {
  EnvFn env = nullptr;          // nullptr: getenv
  size_t buffer_bytes = 0;      // 0: $RLPROF_CUPTI_BUFFER_KB KiB, else 2 MiB
  size_t buffers = 0;           // 0: $RLPROF_CUPTI_BUFFERS, else 16
};

class CuptiSource : public runtime::Source {
 public:
  explicit CuptiSource(CuptiSourceOptions o = {});
  ~CuptiSource() override;

  std::string_view name() const override { return "cupti"; }
  bool Wanted(const config::ProcessPlan& p) const override {
    return config::DeviceActivitiesFor(p).any();
  }
  bool Configure(const runtime::SourceContext& ctx) override;
  void Start(uint32_t gen) override;
  void Stop(uint32_t gen) override;
  void Drain(runtime::SourceSink& sink, uint32_t final_gen) override;
  // Device records are drained ten times a second while a window is open (the writer's flush
  // interval is longer): CUPTI's buffers (16 × 2 MiB by default) go back to it that often.
  double TickInterval() const override { return 0.1; }
  runtime::SourceCounters Counters(uint32_t gen) override;
  void Shutdown() override;

  // External correlation (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0): work launched between a
  // push and its pop carries `id` (the runtime API event's arg1). For host ranges / operators
  // of other sources; no-ops while CUPTI is not active.
  // Installed as the runtime's correlation hooks (runtime::PushCorrelation,
  // rlprof_correlation_push) while this source is active.
  static void PushExternalId(uint64_t id) noexcept;
  static void PopExternalId() noexcept;

  bool active() const { return active_.load(std::memory_order_acquire); }
  std::string status() const;

 private:
  struct Buffer {
    uint8_t* data;
    size_t valid;
  };
  static void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                       size_t valid);
  static uint64_t CUPTIAPI Timestamp();
  bool EnableKinds(bool on, std::string* error, CUptiResult* result = nullptr);
  // Subscribes and registers the buffer callbacks unless still claimed (claim_mu_ held); false
  // and why not when CUPTI refuses (subscribe_result: what cuptiSubscribe answered).
  bool Claim(std::string* why, CUptiResult* subscribe_result = nullptr);
  void ApplyOmit();              // $RLPROF_CUPTI_OMIT: kinds taken out of the plan's (diagnostic)
  void ReleaseIfIdle();
  void SetWindowStatus(uint32_t gen, std::string s);
  void Off(const std::string& why, bool warn);  // off for the session
  void Tell(const std::string& why, bool warn);  // the info / warning line, once per process
  void MeasureOffset();
  uint32_t GenFor(int64_t ts) const;
  void ConvertBuffer(runtime::SourceSink& sink, const Buffer& b);
  bool EmitOrDefer(runtime::SourceSink& sink, uint32_t gen, const format::Event& e);
  void RetryDeferred(runtime::SourceSink& sink);
  void FinishWindow(runtime::SourceSink& sink, uint32_t final_gen);
  void RecordText(const CUpti_Activity* r, uint32_t gen, int64_t offset);
  void CloseRecording(uint32_t gen);

  CuptiSourceOptions opt_;
  CuptiApi api_;
  bool loaded_ = false, load_failed_ = false;
  std::string load_error_;
  // The claim on CUPTI (claim_mu_): held from a window's Start until the writer has flushed its
  // records (release_after_flush_ set by Stop, acted on by ReleaseIfIdle).
  std::mutex claim_mu_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool release_after_flush_ = false;
  config::DeviceActivities acts_;
  std::atomic<bool> active_{false};
  std::atomic<bool> enabled_{false};
  void SetStatus(std::string s);
  mutable std::mutex status_mu_;  // status_ is set on the training thread, read by the writer
  std::string status_ = "off";                   // the session's (set by Configure / Off)
  std::map<uint32_t, std::string> window_status_;  // per window: "on" or why not (Start)
  bool omit_warned_ = false;
  std::atomic<bool> told_{false};  // the info / warning line was printed (once per process)

  // Clock: records are CLOCK_MONOTONIC ns (timestamp callback) or CUPTI's clock + offset_ns_.
  bool ts_callback_ = false;
  int64_t offset_ns_ = 0;
  int64_t offset_error_ns_ = 0;

  // Buffer pool and completed queue (pool_mu_).
  std::mutex pool_mu_;
  std::vector<uint8_t*> all_buffers_;
  std::vector<uint8_t*> pool_;
  std::vector<Buffer> completed_;
  std::vector<Buffer> draining_;  // writer thread
  std::atomic<uint64_t> starved_{0};
  std::atomic<uint64_t> cupti_dropped_{0};
  std::atomic<uint64_t> buffers_completed_{0};
  size_t buffer_bytes_ = 0;

  // Windows (win_mu_): generation and open time, for attributing records.
  mutable std::mutex win_mu_;
  std::vector<std::pair<uint32_t, int64_t>> windows_;

  // Writer thread.
  std::unique_ptr<CuptiRecordConverter> conv_;
  struct GenTally {
    uint64_t emitted = 0;  // events the window's capture took
    CuptiCounts counts;    // records converted, by kind
  };
  std::map<uint32_t, GenTally> per_gen_;  // per window, until its Counters
  uint64_t late_ = 0;                     // records for no open capture
  // Records of a window whose capture the writer has not opened yet (its Open command queued
  // behind the previous window's Close, whose final flush brought them): emitted at a later
  // Drain. Windows up to finished_gen_ have had their final drain.
  static constexpr size_t kMaxDeferred = size_t{1} << 20;
  std::vector<std::pair<uint32_t, format::Event>> deferred_;
  uint32_t finished_gen_ = 0;
  uint64_t reported_bad_time_ = 0;        // the converter's bad_time at the previous Counters()
  uint64_t reported_starved_ = 0, reported_dropped_ = 0;
  std::mutex counters_mu_;                // per_gen_ / late_ between Drain and Counters

  // Recording ($RLPROF_CUPTI_RECORD_DIR; record_mu_): one file per window.
  std::string record_dir_;
  std::atomic<uint32_t> start_tid_{0};  // the thread that opened the latest window (tid=MAIN)
  std::mutex record_mu_;
  std::map<uint32_t, std::FILE*> record_files_;
  std::string record_line_;
  uint64_t recorded_dropped_ = 0;
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_CUPTI_SOURCE_H_
