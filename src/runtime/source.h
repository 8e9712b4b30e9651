// The Source seam: everything that records into a capture besides the markers — framework
// operators, memory samples, device activity (CUPTI), NVTX — is a Source that the session
// starts, drains and stops with the capture windows (the model is Kineto's IActivityProfiler).
// The runtime never includes a vendor SDK: a source lives in src/sources (or in another shared
// object, registered through the C API rlprof_register_source) and implements this interface.
//
//   class MySource : public runtime::Source {
//     std::string_view name() const override { return "my"; }
//     bool Wanted(const config::ProcessPlan& p) const override { return p.contents.device; }
//     void Start(uint32_t gen) override { … }        // window `gen` opened
//     void Stop(uint32_t gen) override { … }         // it closed: produce no more for it
//     void Drain(SourceSink& sink, uint32_t final_gen) override {   // writer thread
//       sink.Emit(gen, event, TimeBase::kMonotonicNs);
//     }
//   };
//   runtime::SourceRegistry::Get().Register(std::make_shared<MySource>());
//
// Lifecycle (per session; every call is guarded: an exception disables that source only):
//   Configure(ctx)   once, when a session whose plan Wants() it is set up (or when the source is
//                    registered while such a session is live). false: the source stays off.
//   Start(gen)       a window opens; training thread, session lock held. Keep it short.
//   Boundary(gen)    at each step / stage boundary inside the window; training thread.
//   Flush(gen)       just before the window stops recording (events stamped now still land);
//                    training thread. Bounded: the window-close budget is 1 ms for all sources.
//   Stop(gen)        the window stopped recording; training thread. Stop producing for it.
//   Tick(gen)        every writer wake-up (≤ flush_interval_s) while a window is open; writer
//                    thread, session lock held.
//   Drain(sink, g)   writer thread, no session lock: hand over what was collected. g != 0: the
//                    capture of window g is about to be finalised — hand over everything of it
//                    (device sources flush their SDK's buffers here, not on the training thread).
//   Counters(gen)    writer thread, when the capture of gen is finalised: key/value facts for
//                    the manifest's sources.<name> object (records, drops, status, warnings).
//   Shutdown()       the session ends (after its writer stopped).
// Two ways to record: host-side sources call EmitRecord / RuntimeLink::emit from the thread the
// event happened on (raw ticks, the thread's track); device sources emit in Drain through the
// SourceSink, on their own tracks, in ticks or CLOCK_MONOTONIC ns.
// Thread-safety: SourceRegistry and SourceSet are internally locked; a snapshot of the set
// (shared_ptr) keeps every source it holds alive while it is used.
#ifndef RLPROF_SRC_RUNTIME_SOURCE_H_
#define RLPROF_SRC_RUNTIME_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "rlprof/config/plan.h"
#include "rlprof/format/event.h"

namespace rlprof::runtime {

enum class TimeBase : uint8_t {
  kTicks = 0,        // the hot path's raw ticks (internal::ReadTicks())
  kMonotonicNs = 1,  // CLOCK_MONOTONIC nanoseconds (the capture's timeline)
};

// What a source may do on the writer thread during Drain.
class SourceSink {
 public:
  virtual ~SourceSink() = default;
  // Appends `e` to the capture of window `gen` (dropped and counted when that capture is not
  // open, or over its budget). `e.track` is the source's own (AddTrack), or 0.
  virtual bool Emit(uint32_t gen, const format::Event& e, TimeBase base) = 0;
  // A track of this session (device stream, counter, …); 0 when no more ids are left.
  virtual uint16_t AddTrack(format::TrackKind kind, uint64_t os_id, const std::string& name) = 0;
  // The track of OS thread `tid` (the one its markers use when it recorded, else a new one):
  // host-side activity a device SDK reports later (runtime API calls) lands on its thread.
  virtual uint16_t ThreadTrack(uint64_t tid) = 0;
  // Id of `s` in the session's string table.
  virtual uint32_t Intern(std::string_view s) = 0;
  // True while the capture of window `gen` is open and accepting events.
  virtual bool Accepting(uint32_t gen) const = 0;
};

// External correlation: a device source that can tag the device work launched between a push
// and its pop (CUPTI's external correlation ids) installs these hooks; host-side sources (torch
// operators, host ranges) call PushCorrelation / PopCorrelation around their work. Without
// hooks both are one relaxed load. Any thread; push/pop nest per thread.
struct CorrelationHooks {
  void (*push)(uint64_t id) noexcept = nullptr;
  void (*pop)() noexcept = nullptr;
};
// `hooks` must outlive its installation (a static); nullptr removes them.
void SetCorrelationHooks(const CorrelationHooks* hooks) noexcept;
void PushCorrelation(uint64_t id) noexcept;
void PopCorrelation() noexcept;
// True while hooks are installed (a device source that takes external correlation ids is
// configured for the session): host sources push ids only then, so the CPU path pays nothing.
bool CorrelationActive() noexcept;

// One manifest entry: sources.<name>.<key> = value.
using SourceValue = std::variant<int64_t, double, std::string>;
using SourceCounters = std::vector<std::pair<std::string, SourceValue>>;

// What a source is told when it is configured.
struct SourceContext {
  const config::Plan* plan = nullptr;
  const config::ProcessPlan* process = nullptr;
  bool tsc_ticks = false;  // ticks are TSC cycles (else CLOCK_MONOTONIC ns)
  double flush_interval_s = 1.0;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string_view name() const = 0;
  // Whether this process's plan asks for what the source captures.
  virtual bool Wanted(const config::ProcessPlan& plan) const = 0;
  virtual bool Configure(const SourceContext& ctx) { (void)ctx; return true; }
  virtual void Start(uint32_t gen) = 0;
  virtual void Boundary(uint32_t gen) { (void)gen; }
  virtual void Flush(uint32_t gen) { (void)gen; }
  virtual void Stop(uint32_t gen) = 0;
  virtual void Tick(uint32_t gen) { (void)gen; }
  // How often Tick should come at the latest (seconds; 0 = the writer's flush interval is fine).
  virtual double TickInterval() const { return 0; }
  virtual void Drain(SourceSink& sink, uint32_t final_gen) { (void)sink; (void)final_gen; }
  virtual SourceCounters Counters(uint32_t gen) { (void)gen; return {}; }
  // false: left out of the manifest's sources for a window it recorded nothing in (the built-in
  // samples source, which every session has).
  virtual bool ListedWhenIdle() const { return true; }
  virtual void Shutdown() {}
};

// Process-wide list of registered sources (built-in ones are added by the session itself).
class SourceRegistry {
 public:
  static SourceRegistry& Get();
  // False when a source of that name is already registered.
  bool Register(std::shared_ptr<Source> s);
  // The source removed (nullptr if none): a live session stops using it at once.
  std::shared_ptr<Source> Unregister(std::string_view name);
  std::vector<std::shared_ptr<Source>> List() const;

  // The live session's set, told about (un)registrations (set by the session).
  void SetListener(class SourceSet* set);

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Source>> sources_;
  SourceSet* listener_ = nullptr;
};

// The sources of one session. Every call into a source is guarded: a source that throws is
// switched off (counted in its manifest entry as status "failed: …"); the others go on.
class SourceSet {
 public:
  explicit SourceSet(SourceContext ctx) : ctx_(ctx) {}
  // Configures `s` if the plan wants it; false when not wanted or its Configure said no.
  bool Add(std::shared_ptr<Source> s);
  void Remove(std::string_view name);
  size_t size() const;
  // The smallest TickInterval() of the sources (0 = none asks).
  double TickInterval() const;
  std::vector<std::string> Names() const;

  void Start(uint32_t gen);
  void Boundary(uint32_t gen);
  void Flush(uint32_t gen);
  void Stop(uint32_t gen);
  void Tick(uint32_t gen);
  void Drain(SourceSink& sink, uint32_t final_gen);
  // sources.<name> objects of the manifest, as JSON text ("" when there are no sources).
  std::string CountersJson(uint32_t gen);
  void Shutdown();

 private:
  struct Entry {
    std::shared_ptr<Source> source;
    std::string name;
    std::atomic<bool> failed{false};
    std::mutex mu;        // guards failure
    std::string failure;  // why it was switched off
  };
  using List = std::vector<std::shared_ptr<Entry>>;
  std::shared_ptr<const List> Snapshot() const;
  template <typename F>
  void Each(const char* what, F&& f);

  SourceContext ctx_;
  mutable std::mutex mu_;  // guards list_ (the pointer), briefly
  std::shared_ptr<const List> list_ = std::make_shared<List>();
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_SOURCE_H_
