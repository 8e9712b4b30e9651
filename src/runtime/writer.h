// The background writer thread: drains the per-thread buffers of the open capture window,
// converts ticks to ns, and writes each capture directory (events.rlp + manifest.json).
// The training thread only enqueues commands; it never waits for disk or compression.
//
//   Writer w(options);                       // options: run dir, identity, clock, budget…
//   w.Start();
//   w.Open({.gen = gen, .scope = "e2e", .first_step = 2, .open_ticks = ReadTicks()});
//   …                                        // every flush_interval_s the open capture's new
//   w.Close({.gen = gen, .reason = "step_end", .steps = {2}});   // events reach the disk
//   w.WaitIdle(30);  w.Stop();
//
// Crash safety: events are flushed as complete chunks at least every flush interval (or
// flush_bytes), and the capture directory with a manifest saying complete: false is written at
// the first of those flushes, so a SIGKILL leaves a readable prefix and a manifest that says
// what the file holds. A window that closes before its first flush is written once, at its
// close (directory, events.rlp, the final manifest): what it holds never reached the disk
// before, so a SIGKILL inside it loses it either way, and short windows cost two files and no
// rename. RequestSignalFlush() (async-signal-
// safe) makes the thread close and finalise every open capture; WaitSignalFlush() waits for it.
//
// Faults: nothing here throws into the caller or lets an exception end the writer thread.
// The first I/O error (full disk: ENOSPC, EFBIG, EDQUOT; EACCES; …) is reported once through
// on_fatal; the capture it hit is finalised with complete: false and the number of events lost
// (counts.dropped_write_error). The final manifest is written atomically, or, when no new file
// can be created (full disk), rewritten in place over the open-time manifest, which is padded
// for that purpose (kManifestReserveBytes).
//
// Thread-safety: Open/Close/WaitIdle/Stop/Captures may be called from any thread;
// RequestSignalFlush and WaitSignalFlush from a signal handler.
#ifndef RLPROF_SRC_RUNTIME_WRITER_H_
#define RLPROF_SRC_RUNTIME_WRITER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rlprof/config/plan.h"
#include "rlprof/rlprof.hpp"
#include "src/base/status.h"
#include "src/format/manifest.h"
#include "src/runtime/clock.h"
#include "src/runtime/source.h"

namespace rlprof::runtime {

struct Chunk;

struct WindowOpen {
  uint32_t gen = 0;
  std::string scope;
  std::string mode;  // "e2e" | "discrete" | "manual"
  std::string role, stage;
  int64_t first_step = 0;  // the capture directory is step<first_step>/<scope>/
  std::string trigger;     // the `rlprof trigger` request that opened it ("" = the config)
  uint64_t open_ticks = 0;
};

struct WindowClose {
  uint32_t gen = 0;
  std::string reason;  // close_reason of the manifest
  std::vector<int64_t> steps;
  uint64_t close_ticks = 0;
  // Scheduled captures: the manifest's window.sampling (schedule, sub-steps held); unit "" =
  // not sampled.
  format::Manifest::Sampling sampling{};
};

struct WriterOptions {
  std::string run_dir;  // absolute <save_path>/<run_id>
  std::string run_id;
  Identity identity;
  std::vector<std::string> contents;
  double ops_sampling = 1.0;  // Manifest::ops_sampling
  std::string config_json;
  ClockCalibration clock;
  double flush_interval_s = 1.0;  // an open capture's events reach the disk at least this often
  uint64_t flush_bytes = 4u << 20;
  config::Budget budget;
  bool quiet = false;
  // Called from the writer thread with no writer lock held.
  std::function<void()> on_tick;                                  // each wake-up while a capture is open
  std::function<void()> on_poll;  // each wake-up, open capture or not (≤ 500 ms apart): trigger requests
  std::function<void(uint32_t gen)> on_budget;                    // the capture reached its budget
  // The first I/O fault of this writer (a capture that cannot be created, a write error, a
  // manifest that cannot be written, an unexpected exception on the writer thread); later
  // faults are only recorded in the manifests. Without it the writer prints one warning.
  std::function<void(const std::string& message)> on_fatal;
  // The session's sources: drained on every wake-up, and once more (final) before a capture
  // is finalised; their counters go into the manifest's "sources" object.
  std::shared_ptr<SourceSet> sources;
};

struct WriterStats {
  uint64_t captures = 0;
  uint64_t late_events = 0;  // published after their window was finalised (discarded)
  uint64_t captures_failed = 0;  // windows whose capture could not be made on disk
  uint64_t flushes = 0;
  uint64_t source_events = 0;       // events sources emitted through the sink
  uint64_t source_events_late = 0;  // … for a window whose capture was not open (discarded)
};

// Whitespace appended to the open-time manifest.json: room for the final manifest to be
// rewritten in place on a full disk (it adds close time, reason, counts and up to 4 errors).
inline constexpr size_t kManifestReserveBytes = 4096;
// How often (at most) an open capture's manifest is rewritten with the events flushed so far.
inline constexpr int64_t kProgressManifestIntervalNs = 1'000'000'000;

class Writer {
 public:
  explicit Writer(WriterOptions options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Starts the thread; an error (no eventfd, no thread: std::system_error) is returned, not thrown.
  base::Status Start();
  void Open(const WindowOpen& w);
  void Close(const WindowClose& w);
  // Puts what the open captures hold on disk now (creating them there if they are not yet).
  void Flush();
  // Waits until every command so far has been carried out; false on timeout.
  bool WaitIdle(double timeout_s);
  // Finalises every open capture (reason shutdown) and joins the thread.
  void Stop() noexcept;

  void RequestSignalFlush();              // async-signal-safe
  bool WaitSignalFlush(int timeout_ms);   // async-signal-safe

  std::vector<std::string> Captures() const;
  WriterStats stats() const;
  // The measured offset to rank 0 for the manifests written from now on.
  void SetClockOffsetToRank0(int64_t offset_ns) {
    offset_to_rank0_ns_.store(offset_ns, std::memory_order_relaxed);
    offset_measured_.store(true, std::memory_order_release);
  }

 private:
  struct Capture;
  class Sink;
  friend class Sink;
  struct Command {
    enum class Type { kOpen, kClose, kFlush } type;
    WindowOpen open;
    WindowClose close;
    uint64_t seq = 0;  // submission order (1, 2, ...)
  };
  void FinishAllFromSignal();

  void Loop();
  void Process(Command& c);
  void OpenCapture(const WindowOpen& w);
  // Makes the capture's directory and events.rlp (FlushAll then writes the open-time manifest,
  // FinishCapture the final one); false after reporting the fault (the capture is then failed
  // and its window closed).
  bool CreateOnDisk(Capture& cap);
  void FinishCapture(uint32_t gen, const std::string& reason, const std::vector<int64_t>* steps,
                     uint64_t close_ticks,
                     const format::Manifest::Sampling& sampling = format::Manifest::Sampling());
  void Drain(uint32_t final_gen = 0);
  uint16_t CounterTrack(uint32_t name);  // the counter track of series `name`
  void DrainChunk(Chunk* c);
  void DrainSources(uint32_t final_gen);
  // Appends one event (ts/payload already ns) to `cap`'s batch, applying the event budget.
  void Append(Capture& cap, const format::Event& e);
  void WriteBatches();
  format::Manifest BaseManifest(const Capture& c) const;
  void WriteManifest(Capture& c);
  // The final manifest; false (after reporting the fault) when it could not be written.
  bool WriteFinalManifest(Capture& c, const format::Manifest& m);
  void CaptureError(Capture& c, const std::string& what);
  void ReportFault(const std::string& message);
  // Runs one step of the loop; an exception becomes a fault instead of ending the thread.
  template <typename F>
  void Guarded(const char* what, F&& f) noexcept;
  void FlushAll(bool force);

  WriterOptions opt_;
  const std::string config_text_;  // FormatManifestConfig(opt_.config_json), made once
  std::thread thread_;
  int wake_fd_ = -1;
  int ack_pipe_[2] = {-1, -1};
  std::atomic<bool> signal_flush_{false};
  // Commands submitted so far (read by the signal handler) and, at a signal, how many had been:
  // those are applied before the signal's flush, later ones after it, so a window the program
  // closes after the signal (its step ends as the exception unwinds) keeps reason "shutdown".
  std::atomic<uint64_t> submitted_seq_{0};
  std::atomic<uint64_t> signal_flush_at_{0};
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};  // set by Stop() (no allocation: Stop never throws)
  bool fault_reported_ = false;              // writer thread
  std::atomic<int64_t> offset_to_rank0_ns_{0};
  std::atomic<bool> offset_measured_{false};

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<Command> queue_;
  uint64_t submitted_ = 0, processed_ = 0;
  std::vector<std::string> captures_;
  WriterStats stats_;

  // Writer-thread state.
  std::map<uint32_t, std::unique_ptr<Capture>> open_;
  std::unordered_map<uint32_t, uint16_t> counter_tracks_;  // name id → counter track
  uint32_t known_gen_ = 0;  // newest window whose Open was processed
  std::vector<format::Event> spare_batch_;  // a finished capture's batch, for the next one
  // The scope directories this writer made, each with the suffix its next capture tries
  // first: the n-th capture of one step and scope (manual captures, decode-step windows) costs
  // one mkdir, not n + 2.
  std::unordered_map<std::string, int> next_suffix_;
};

// Testing only: called on the writer thread in every Drain, after it took the hand-off list and
// before it reads the threads' current chunks — where a thread that exits moves its chunk from
// one to the other (SessionTest.AThreadThatExitsAsItsWindowClosesLosesNothing). nullptr: none.
void SetDrainHookForTesting(void (*hook)(uint32_t final_gen));

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_WRITER_H_
