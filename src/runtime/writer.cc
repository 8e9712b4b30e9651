#include "src/runtime/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include "src/base/files.h"
#include "src/base/strings.h"
#include "src/format/event_schema.h"
#include "src/format/raw.h"
#include "src/runtime/thread_buffer.h"
#include "src/runtime/writer_capture.h"

namespace rlprof::runtime {

Writer::Writer(WriterOptions options)
    : opt_(std::move(options)), config_text_(format::FormatManifestConfig(opt_.config_json)) {}

Writer::~Writer() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
  for (int fd : ack_pipe_)
    if (fd >= 0) close(fd);
}

base::Status Writer::Start() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return base::Internal(std::string("eventfd: ") + std::strerror(errno));
  if (pipe2(ack_pipe_, O_NONBLOCK | O_CLOEXEC) != 0)
    return base::Internal(std::string("pipe: ") + std::strerror(errno));
  Recorder::Get().set_wake_fd(wake_fd_);
  running_ = true;
  // The thread must never run the application's signal handlers: the SIGTERM/SIGINT flush
  // waits for this very thread. Blocking inside Loop() leaves a window at thread start in
  // which a signal can land here (seen: a SIGTERM right after start hung 2 s and lost the
  // capture), so the thread is created with every signal already blocked.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  std::string error;
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::exception& e) {  // std::system_error: EAGAIN (thread limit), ENOMEM
    error = e.what();
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!error.empty()) {
    running_ = false;
    Recorder::Get().set_wake_fd(-1);
    return base::Internal("cannot start the writer thread: " + error);
  }
  return base::Status::Ok();
}

namespace {
void WakeFd(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}
}  // namespace

void Writer::Open(const WindowOpen& w) {
  // The writer is not woken for an opening window unless a source wants its ticks from the
  // start (the memory sampler, device capture): a wake-up costs 50–100 µs of CPU on a VM (its
  // timer), and nothing else is due yet. The command waits for the next wake-up — the close,
  // a full chunk, the interval, or a flush — which takes the commands in order before any of
  // this window's events (Drain defers chunks of a window it does not know yet).
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({Command::Type::kOpen, w, {}, submitted_seq_.load(std::memory_order_relaxed) + 1});
    submitted_seq_.fetch_add(1, std::memory_order_release);
    ++submitted_;
  }
  if (opt_.sources != nullptr && opt_.sources->TickInterval() > 0) WakeFd(wake_fd_);
}

void Writer::Close(const WindowClose& w) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({Command::Type::kClose, {}, w, submitted_seq_.load(std::memory_order_relaxed) + 1});
    submitted_seq_.fetch_add(1, std::memory_order_release);
    ++submitted_;
  }
  WakeFd(wake_fd_);
}

void Writer::Flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({Command::Type::kFlush, {}, {}, submitted_seq_.load(std::memory_order_relaxed) + 1});
    submitted_seq_.fetch_add(1, std::memory_order_release);
    ++submitted_;
  }
  WakeFd(wake_fd_);
}

bool Writer::WaitIdle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!running_) return true;
  if (processed_ < submitted_) WakeFd(wake_fd_);  // an Open may be waiting (Open does not wake)
  return idle_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                           [this] { return processed_ >= submitted_ || !running_; });
}

void Writer::Stop() noexcept {
  if (!thread_.joinable()) return;
  // A flag, not a queued command: Stop allocates nothing, so it cannot fail to stop the thread
  // (a joinable std::thread left at exit would call std::terminate).
  stop_requested_.store(true);
  WakeFd(wake_fd_);
  try {
    thread_.join();
  } catch (...) {  // std::system_error: only for a thread that cannot be joined from here
    thread_.detach();
  }
  Recorder::Get().set_wake_fd(-1);
}

void Writer::RequestSignalFlush() {
  signal_flush_at_.store(submitted_seq_.load(std::memory_order_acquire), std::memory_order_relaxed);
  signal_flush_.store(true, std::memory_order_release);
  if (wake_fd_ >= 0) WakeFd(wake_fd_);
}

bool Writer::WaitSignalFlush(int timeout_ms) {
  if (!running_.load(std::memory_order_relaxed) || ack_pipe_[0] < 0) return false;
  pollfd p{ack_pipe_[0], POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  char b;
  return read(ack_pipe_[0], &b, 1) == 1;
}

std::vector<std::string> Writer::Captures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return captures_;
}

WriterStats Writer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

template <typename F>
void Writer::Guarded(const char* what, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    try {
      ReportFault(std::string("unexpected error while ") + what + ": " + e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      ReportFault(std::string("unexpected error while ") + what);
    } catch (...) {
    }
  }
}

void Writer::Loop() {
  // Named for top -H, perf and gdb (at most 15 characters).
  pthread_setname_np(pthread_self(), "rlprof-writer");
  // Signals are for the application's threads (blocked since creation, see Start()).
  // Every step is guarded: an exception on this thread would std::terminate the training
  // process; it becomes one fault report instead, and the loop goes on (so Stop() returns).
  for (;;) {
    // While a capture is open: every flush interval, or more often when a source asks for its
    // ticks (the memory sampler's interval, device capture's buffers); otherwise twice a second
    // (trigger requests).
    double wake_s = opt_.flush_interval_s;
    if (opt_.sources != nullptr)
      if (const double t = opt_.sources->TickInterval(); t > 0) wake_s = std::min(wake_s, t);
    const int timeout_ms = open_.empty() ? 500 : std::max(1, static_cast<int>(wake_s * 1000));
    pollfd p{wake_fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      uint64_t v;
      [[maybe_unused]] ssize_t n = read(wake_fd_, &v, sizeof v);
    }
    // Read the flag before taking the queue: every command submitted before Stop() is in it.
    const bool stop = stop_requested_.load();
    std::deque<Command> cmds;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cmds.swap(queue_);
    }
    // A signal's flush goes between the commands submitted before it and those after it.
    const bool signalled = signal_flush_.exchange(false, std::memory_order_acquire);
    const uint64_t flush_at = signal_flush_at_.load(std::memory_order_relaxed);
    bool flushed = false;
    for (Command& c : cmds) {
      if (signalled && !flushed && c.seq > flush_at) {
        FinishAllFromSignal();
        flushed = true;
      }
      Guarded("processing a command", [&] { Process(c); });
    }
    Guarded("writing events", [&] {
      Drain();
      FlushAll(false);
    });
    if (stop || (signalled && !flushed)) FinishAllFromSignal();
    if (signalled && !stop) {
      const char b = 1;
      [[maybe_unused]] ssize_t n = write(ack_pipe_[1], &b, 1);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      processed_ += cmds.size();
      if (stop) running_ = false;
    }
    idle_cv_.notify_all();
    if (stop) return;
    Guarded("refilling buffers", [] { Recorder::Get().RefillPool(); });
    Guarded("closing a capture over budget", [&] {
      std::vector<uint32_t> budget_hits;
      for (auto& [gen, cap] : open_)
        if (cap->over_budget && !cap->budget_reported) {
          cap->budget_reported = true;
          budget_hits.push_back(gen);
        }
      for (uint32_t gen : budget_hits) {
        if (opt_.on_budget) opt_.on_budget(gen);
        else FinishCapture(gen, "budget", nullptr, 0);
      }
    });
    if (!open_.empty() && opt_.on_tick) Guarded("advancing the schedule", [&] { opt_.on_tick(); });
    if (opt_.on_poll) Guarded("polling trigger requests", [&] { opt_.on_poll(); });
  }
}

void Writer::Process(Command& c) {
  if (c.type == Command::Type::kOpen) {
    OpenCapture(c.open);
  } else if (c.type == Command::Type::kClose) {
    if (open_.count(c.close.gen))
      FinishCapture(c.close.gen, c.close.reason, &c.close.steps, c.close.close_ticks,
                    c.close.sampling);
  } else if (c.type == Command::Type::kFlush) {
    for (auto& [gen, cap] : open_)
      if (!cap->created && !cap->failed) CreateOnDisk(*cap);
    Drain();
    FlushAll(/*force=*/true);
  }
}

void Writer::OpenCapture(const WindowOpen& w) {
  known_gen_ = std::max(known_gen_, w.gen);
  if (fault_reported_) {
    // Profiling was turned off (the warning said so) after this window was asked for: make no
    // directory for it.
    Recorder::Get().CloseWindow(w.gen);
    return;
  }
  // Nothing reaches the disk yet: the directory, events.rlp and the open-time manifest are made
  // when the capture has something to flush (flush_interval_s after it opened, or flush_bytes
  // of events) or when it closes, whichever comes first (CreateOnDisk). A window shorter than
  // the flush interval (most step and stage windows) then costs two files and no rename: the
  // directory's files are what the window's fixed cost on the writer thread is made of.
  auto cap = std::make_unique<Capture>();
  cap->batch.swap(spare_batch_);  // the last capture's memory (no fresh pages to fault in)
  cap->batch.clear();
  cap->info = w;
  cap->anchor = SampleClock(opt_.clock.converter.source);
  cap->conv = Refine(opt_.clock, cap->anchor);
  cap->open_ns = cap->conv.ToNs(w.open_ticks);
  cap->last_flush_ns = cap->anchor.monotonic_ns;
  open_[w.gen] = std::move(cap);
}

bool Writer::CreateOnDisk(Capture& cap) {
  const WindowOpen& w = cap.info;
  const Identity& id = opt_.identity;
  const std::string step_dir = opt_.run_dir + "/step" + std::to_string(w.first_step);
  const std::string parent = step_dir + "/" + base::SanitizeForPath(w.scope);
  const std::string leaf = "rank" + std::to_string(id.rank) + "-" + base::SanitizeForPath(id.host) +
                           "-" + std::to_string(id.pid);
  auto fatal = [&](const std::string& msg) {
    // Nothing of this window can be written: stop recording into it, and drop what it holds.
    cap.failed = true;
    cap.lost_on_error += cap.batch.size();
    cap.batch.clear();
    Recorder::Get().CloseWindow(w.gen);
    ReportFault(msg);
    return false;
  };
  cap.created = true;  // tried once: a failure is not retried at every flush
  // The step and scope directories by two mkdir calls (the run directory exists): a tenth of a
  // markers window's writer time went to the stat calls of a general create_directories.
  // A scope directory this writer made before is not made again (the stage windows of one
  // step share it), unless it has gone since (ENOENT below).
  auto made = [](const std::string& d) { return mkdir(d.c_str(), 0777) == 0 || errno == EEXIST; };
  auto make_parent = [&]() -> bool {
    if (!(made(step_dir) && made(parent)))
      if (base::Status s = base::MakeDirs(parent); !s.ok()) return fatal(s.message());
    next_suffix_.try_emplace(parent, 0);
    return true;
  };
  if (!next_suffix_.count(parent) && !make_parent()) return false;
  std::string dir;
  int& next = next_suffix_[parent];
  bool remade = false;
  for (int tries = 0; tries < 10000; ++tries, ++next) {
    std::string cand = parent + "/" + leaf + (next == 0 ? "" : "-" + std::to_string(next));
    if (mkdir(cand.c_str(), 0777) == 0) {
      dir = cand;
      ++next;
      break;
    }
    if (errno == ENOENT && !remade) {  // removed under the running job: made again, once
      remade = true;
      if (!make_parent()) return false;
      --next;
      continue;
    }
    if (errno != EEXIST) return fatal(cand + ": " + std::strerror(errno));
  }
  if (dir.empty()) return fatal(parent + ": too many captures with the same name");
  cap.dir = dir;
  auto raw = format::RawWriter::Create(
      dir + "/events.rlp", {.rank = id.rank, .pid = static_cast<uint32_t>(id.pid), .host = id.host});
  if (!raw.ok()) return fatal(raw.status().message());
  cap.raw = std::move(raw).value();
  return true;
}

void Writer::DrainChunk(Chunk* c) {
  auto it = open_.find(c->gen);
  Capture* cap = it == open_.end() ? nullptr : it->second.get();
  const uint32_t n = c->count.load(std::memory_order_acquire);
  const uint32_t d = c->dropped.load(std::memory_order_relaxed);
  if (d > c->dropped_seen) {
    if (cap != nullptr) cap->dropped_full += d - c->dropped_seen;
    c->dropped_seen = d;
  }
  if (n <= c->consumed) return;
  if (cap == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.late_events += n - c->consumed;
    c->consumed = n;
    return;
  }
  const Record* recs = c->records();
  for (uint32_t i = c->consumed; i < n; ++i) {
    format::Event e = recs[i];
    e.ts_ns = cap->conv.ToNs(static_cast<uint64_t>(e.ts_ns));
    if (e.kind == format::EventKind::kComplete) e.payload = cap->conv.DurationNs(e.payload);
    if (e.kind == format::EventKind::kCounter) e.track = CounterTrack(e.name);
    Append(*cap, e);
  }
  c->consumed = n;
}

uint16_t Writer::CounterTrack(uint32_t name) {
  auto ct = counter_tracks_.find(name);
  if (ct == counter_tracks_.end()) {
    const std::string text = Recorder::Get().interner().Lookup(name);
    ct = counter_tracks_.emplace(name, Recorder::Get().AddTrack(format::TrackKind::kCounter, 0, text))
             .first;
  }
  return ct->second;
}

void Writer::Append(Capture& cap, const format::Event& e) {
  const uint64_t max_events = opt_.budget.max_events;
  if (cap.over_budget || (max_events != 0 && cap.events + cap.batch.size() >= max_events)) {
    if (!cap.over_budget) {
      cap.over_budget = true;
      Recorder::Get().CloseWindow(cap.info.gen);
    }
    ++cap.dropped_budget;
    return;
  }
  cap.max_end_ns = std::max(cap.max_end_ns, e.end_ns());
  cap.batch.push_back(e);
}

// What sources see of the writer during Drain (writer thread only).
class Writer::Sink final : public SourceSink {
 public:
  explicit Sink(Writer* w) : w_(w) {}
  bool Emit(uint32_t gen, const format::Event& in, TimeBase base) override {
    auto it = w_->open_.find(gen);
    if (it == w_->open_.end() || it->second->failed) {
      ++late_;
      return false;
    }
    Capture& cap = *it->second;
    format::Event e = in;
    if (base == TimeBase::kTicks) {
      e.ts_ns = cap.conv.ToNs(static_cast<uint64_t>(e.ts_ns));
      if (e.kind == format::EventKind::kComplete) e.payload = cap.conv.DurationNs(e.payload);
    }
    if (e.kind == format::EventKind::kCounter && e.track == 0) e.track = w_->CounterTrack(e.name);
    ++cap.source_events;
    ++emitted_;
    w_->Append(cap, e);
    return true;
  }
  uint16_t AddTrack(format::TrackKind kind, uint64_t os_id, const std::string& name) override {
    return Recorder::Get().AddTrack(kind, os_id, name);
  }
  uint16_t ThreadTrack(uint64_t tid) override { return Recorder::Get().ThreadTrack(tid); }
  uint32_t Intern(std::string_view s) override { return Recorder::Get().interner().InternString(s); }
  bool Accepting(uint32_t gen) const override {
    auto it = w_->open_.find(gen);
    return it != w_->open_.end() && !it->second->failed && !it->second->over_budget;
  }
  uint64_t emitted_ = 0, late_ = 0;

 private:
  Writer* w_;
};

void Writer::DrainSources(uint32_t final_gen) {
  if (opt_.sources == nullptr || opt_.sources->size() == 0) return;
  Sink sink(this);
  opt_.sources->Drain(sink, final_gen);
  if (sink.emitted_ == 0 && sink.late_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.source_events += sink.emitted_;
  stats_.source_events_late += sink.late_;
}

namespace {
std::atomic<void (*)(uint32_t)> drain_hook{nullptr};
}  // namespace

void SetDrainHookForTesting(void (*hook)(uint32_t final_gen)) { drain_hook.store(hook); }

void Writer::Drain(uint32_t final_gen) {
  Recorder& rec = Recorder::Get();
  std::vector<Chunk*> deferred;
  auto take_handoffs = [&] {
    for (Chunk* c = rec.TakeHandoffs(); c != nullptr;) {
      Chunk* next = c->next;
      if (c->gen > known_gen_) {
        deferred.push_back(c);  // its window's Open command is still in the queue
      } else {
        DrainChunk(c);
        rec.Recycle(c);
      }
      c = next;
    }
  };
  take_handoffs();
  if (auto hook = drain_hook.load(std::memory_order_relaxed)) hook(final_gen);
  rec.ForEachCurrentChunk([&](Chunk* c) {
    if (c->gen <= known_gen_) DrainChunk(c);
  });
  // A thread that exited after the first take moved its chunk from current to the hand-offs
  // (both under the Recorder's mutex, which the scan takes): the chunk was in one of the two
  // when the scan ran, so a second take misses nothing. Without it, a thread that recorded
  // its last events and exited as its window closed lost them (late_events), e.g. the end of a
  // range ended on a short-lived thread (test_mstx.py, once in a loaded CI run).
  take_handoffs();
  for (Chunk* c : deferred) rec.ReturnHandoff(c);
  DrainSources(final_gen);
  WriteBatches();
}

void Writer::ReportFault(const std::string& message) {
  if (fault_reported_) return;  // one report per writer: the rest is in the manifests
  fault_reported_ = true;
  if (opt_.on_fatal) {
    opt_.on_fatal(message);
  } else {
    std::fprintf(stderr, "rlprof: warning: cannot write captures under %s (%s)\n",
                 opt_.run_dir.c_str(), message.c_str());
  }
}

void Writer::CaptureError(Capture& c, const std::string& what) {
  // The manifest keeps the first few messages (its size is bounded: see WriteFinalManifest).
  constexpr size_t kMaxErrors = 4;
  if (c.errors.size() < kMaxErrors) c.errors.push_back(what.substr(0, 512));
  if (!c.failed) {
    c.failed = true;
    // Stop recording into this window now: what is recorded from here on could not be written.
    Recorder::Get().CloseWindow(c.info.gen);
    ReportFault(what);  // names the file
  }
}

void Writer::WriteBatches() {
  Recorder& rec = Recorder::Get();
  const int64_t now = MonotonicNowNs();
  const auto interval = static_cast<int64_t>(opt_.flush_interval_s * 1e9);
  for (auto& [gen, cap_ptr] : open_) {
    Capture& cap = *cap_ptr;
    if (!cap.created && !cap.failed) {
      // On disk at its close, or once it has something to flush (OpenCapture); FlushAll then
      // writes the open-time manifest (complete: false) for a process that may be killed.
      const bool due = cap.finishing || now - cap.last_flush_ns >= interval ||
                       cap.batch.size() * sizeof(format::Event) >= opt_.flush_bytes;
      if (!due || !CreateOnDisk(cap)) continue;
    }
    if (cap.batch.empty()) continue;
    if (cap.failed) {
      cap.lost_on_error += cap.batch.size();
      cap.batch.clear();
      continue;
    }
    // Only the strings this capture's events name (their names, and the arguments the event
    // schema says are string ids): the process's whole table was ≈ 0.3 byte an event of small
    // captures, most of it names other captures use.
    std::vector<format::StringEntry> strings;
    std::vector<uint32_t> ids;
    // Ids the interner has handed out so far (one read a batch): any other value is no string
    // (CopyIds would skip it too) and must not size the table below.
    const uint32_t known = rec.interner().size();
    auto want = [&](uint32_t id) {
      if (id == 0 || id >= known) return;
      if (id >= cap.string_emitted.size()) cap.string_emitted.resize(id + 1024u, false);
      if (cap.string_emitted[id]) return;
      cap.string_emitted[id] = true;
      ids.push_back(id);
    };
    // Per category: bit 0 arg0, bit 1 arg1 is a string id (the schema, looked up once).
    static const std::array<uint8_t, 256> kStringArgs = [] {
      std::array<uint8_t, 256> t{};
      for (int c = 0; c < 256; ++c) {
        const format::ArgSpec a = format::ArgSpecFor(static_cast<format::Category>(c));
        t[c] = static_cast<uint8_t>((a.arg0_is_string ? 1 : 0) | (a.arg1_is_string ? 2 : 0));
      }
      return t;
    }();
    // One pass over the batch: the strings and the tracks its events name.
    std::vector<format::TrackEntry> tracks;
    uint32_t last_name = 0;
    for (const format::Event& e : cap.batch) {
      if (e.name != last_name) want(last_name = e.name);
      const uint8_t f = kStringArgs[static_cast<uint8_t>(e.category)];
      if (f & 1) want(e.arg0);
      if (f & 2) want(e.arg1);
      if (e.track >= cap.track_emitted.size()) cap.track_emitted.resize(e.track + 1u, false);
      if (cap.track_emitted[e.track]) continue;
      cap.track_emitted[e.track] = true;
      format::TrackEntry t = rec.TrackInfo(e.track);
      if (t.kind == format::TrackKind::kThread && e.track != 0) cap.threads.insert(e.track);
      if (e.track != 0) tracks.push_back(std::move(t));
    }
    rec.interner().CopyIds(ids, &strings);
    base::Status s = strings.empty() ? base::Status::Ok() : cap.raw->AddStrings(strings);
    if (s.ok() && !tracks.empty()) s = cap.raw->AddTracks(tracks);
    if (s.ok()) s = cap.raw->AddEvents(cap.batch);
    if (!s.ok()) {
      CaptureError(cap, s.message());
      cap.lost_on_error += cap.batch.size();
    } else {
      cap.events += cap.batch.size();
      cap.unflushed += cap.batch.size();
    }
    cap.batch.clear();
    const uint64_t max_bytes = opt_.budget.max_bytes;
    if (max_bytes != 0 && !cap.over_budget && !cap.failed) {
      // The file grows by compressed chunks; once the records could reach the budget even
      // uncompressed, flush so that bytes_written() is exact before deciding.
      if (cap.raw->bytes_written() + cap.unflushed * sizeof(format::Event) >= max_bytes) {
        if (base::Status fs = cap.raw->Flush(); !fs.ok()) CaptureError(cap, fs.message());
        cap.unflushed = 0;
        cap.last_flush_ns = MonotonicNowNs();
      }
      if (cap.raw->bytes_written() >= max_bytes) {
        cap.over_budget = true;
        rec.CloseWindow(gen);
      }
    }
  }
}

void Writer::FinishAllFromSignal() {
  std::vector<uint32_t> gens;
  for (auto& [gen, cap] : open_) gens.push_back(gen);
  for (uint32_t gen : gens)
    Guarded("finalising a capture", [&] { FinishCapture(gen, "shutdown", nullptr, 0); });
  open_.clear();  // even one that failed half-way: nothing more is written to it
}

void Writer::FlushAll(bool force) {
  const int64_t now = MonotonicNowNs();
  const auto interval = static_cast<int64_t>(opt_.flush_interval_s * 1e9);
  for (auto& [gen, cap] : open_) {
    if (cap->failed || !cap->created) continue;
    const bool due = cap->unflushed != 0 &&
                     (force || now - cap->last_flush_ns >= interval ||
                      cap->unflushed * sizeof(format::Event) >= opt_.flush_bytes);
    if (due) {
      if (base::Status s = cap->raw->Flush(); !s.ok()) CaptureError(*cap, s.message());
      cap->unflushed = 0;
      cap->last_flush_ns = now;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.flushes;
    }
    // The open-time manifest (complete: false), written right after the capture's first flush
    // so that it already counts the events on disk; then, at most once a second, what the
    // file holds so far: a process killed with the window open leaves a manifest that says
    // how many events its complete chunks hold.
    if (!cap->failed &&
        (cap->manifest_bytes == 0 ||
         (due && now - cap->manifest_written_ns >= kProgressManifestIntervalNs &&
          cap->raw->events_written() != cap->manifest_events)))
      WriteManifest(*cap);
  }
}

void Writer::FinishCapture(uint32_t gen, const std::string& reason,
                           const std::vector<int64_t>* steps, uint64_t close_ticks,
                           const format::Manifest::Sampling& sampling) {
  Recorder::Get().CloseWindow(gen);
  if (auto f = open_.find(gen); f != open_.end()) f->second->finishing = true;
  Drain(gen);  // creates it on disk (WriteBatches) if it is not yet
  auto it = open_.find(gen);
  if (it == open_.end()) return;
  std::unique_ptr<Capture> cap = std::move(it->second);
  open_.erase(it);
  if (!cap->failed && cap->raw)
    if (base::Status s = cap->raw->Close(); !s.ok()) CaptureError(*cap, s.message());
  if (cap->dir.empty()) {  // never made on disk (it failed): nothing to finalise or list
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.captures_failed;
    return;
  }
  // Every event drained for this capture is either in a complete chunk on disk or lost to
  // the write error (also events the RawWriter had buffered when the disk filled up).
  const uint64_t on_disk = cap->raw ? cap->raw->events_written() : 0;
  const uint64_t drained = cap->events + cap->lost_on_error;
  if (cap->batch.capacity() > spare_batch_.capacity()) {
    cap->batch.clear();
    spare_batch_.swap(cap->batch);
  }
  format::Manifest m = BaseManifest(*cap);
  if (steps != nullptr && !steps->empty()) m.steps = *steps;
  m.window_close_ns = close_ticks != 0 ? cap->conv.ToNs(close_ticks) : MonotonicNowNs();
  // A producer that saw the window open just before it closed may stamp its event a few ns
  // after the close reading: the window covers every event it holds.
  m.window_close_ns = std::max(m.window_close_ns, cap->max_end_ns);
  m.close_reason = cap->over_budget && reason != "shutdown" ? "budget" : reason;
  m.sampling = sampling;
  if (opt_.sources != nullptr) m.sources_json = opt_.sources->CountersJson(gen);
  m.source_events = static_cast<int64_t>(cap->source_events);
  m.event_count = static_cast<int64_t>(on_disk);
  m.dropped_buffer_full = static_cast<int64_t>(cap->dropped_full);
  m.dropped_budget = static_cast<int64_t>(cap->dropped_budget);
  m.dropped_write_error = static_cast<int64_t>(drained > on_disk ? drained - on_disk : 0);
  m.dropped_events = m.dropped_buffer_full + m.dropped_budget + m.dropped_write_error;
  m.threads = static_cast<int64_t>(cap->threads.size());
  m.files = {{"events.rlp", static_cast<int64_t>(cap->raw ? cap->raw->bytes_written() : 0)}};
  m.complete = !cap->failed;
  m.errors = cap->errors;
  if (m.dropped_write_error != 0)
    m.errors.push_back(std::to_string(m.dropped_write_error) + " events lost to the write error");
  const bool manifest_ok = WriteFinalManifest(*cap, m);
  if (!opt_.quiet)
    std::fprintf(stderr, "rlprof: capture %s (%s events%s%s)\n", cap->dir.c_str(),
                 base::FormatCount(static_cast<uint64_t>(m.event_count)).c_str(),
                 m.complete ? ""
                            : (", INCOMPLETE: " +
                               base::FormatCount(static_cast<uint64_t>(m.dropped_write_error)) +
                               " lost to a write error")
                                  .c_str(),
                 manifest_ok ? "" : ", no final manifest");
  std::lock_guard<std::mutex> lock(mu_);
  captures_.push_back(cap->dir);
  ++stats_.captures;
}

}  // namespace rlprof::runtime
