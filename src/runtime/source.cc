#include "src/runtime/source.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

namespace rlprof::runtime {
namespace {
std::atomic<const CorrelationHooks*> g_correlation{nullptr};
}  // namespace

void SetCorrelationHooks(const CorrelationHooks* hooks) noexcept {
  g_correlation.store(hooks, std::memory_order_release);
}

void PushCorrelation(uint64_t id) noexcept {
  if (const CorrelationHooks* h = g_correlation.load(std::memory_order_acquire); h != nullptr && h->push)
    h->push(id);
}

void PopCorrelation() noexcept {
  if (const CorrelationHooks* h = g_correlation.load(std::memory_order_acquire); h != nullptr && h->pop)
    h->pop();
}

bool CorrelationActive() noexcept {
  return g_correlation.load(std::memory_order_acquire) != nullptr;
}

SourceRegistry& SourceRegistry::Get() {
  static SourceRegistry* r = new SourceRegistry;  // never destroyed: sources outlive exit order
  return *r;
}

bool SourceRegistry::Register(std::shared_ptr<Source> s) {
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& o : sources_)
    if (o->name() == s->name()) return false;
  sources_.push_back(s);
  if (listener_ != nullptr) listener_->Add(std::move(s));
  return true;
}

std::shared_ptr<Source> SourceRegistry::Unregister(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(sources_.begin(), sources_.end(),
                         [&](const auto& s) { return s->name() == name; });
  if (it == sources_.end()) return nullptr;
  std::shared_ptr<Source> s = std::move(*it);
  sources_.erase(it);
  if (listener_ != nullptr) listener_->Remove(name);
  return s;
}

std::vector<std::shared_ptr<Source>> SourceRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sources_;
}

void SourceRegistry::SetListener(SourceSet* set) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = set;
  if (set == nullptr) return;
  for (const auto& s : sources_) set->Add(s);
}

bool SourceSet::Add(std::shared_ptr<Source> s) {
  if (s == nullptr) return false;
  try {
    if (ctx_.process == nullptr || !s->Wanted(*ctx_.process)) return false;
    if (!s->Configure(ctx_)) return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlprof: warning: source %.*s failed to configure (%s); it is off\n",
                 static_cast<int>(s->name().size()), s->name().data(), e.what());
    return false;
  } catch (...) {
    return false;
  }
  auto entry = std::make_shared<Entry>();
  entry->name = std::string(s->name());
  entry->source = std::move(s);
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<List>(*list_);
  for (const auto& e : *next)
    if (e->name == entry->name) return false;
  next->push_back(std::move(entry));
  list_ = std::move(next);
  return true;
}

void SourceSet::Remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<List>(*list_);
  next->erase(std::remove_if(next->begin(), next->end(),
                             [&](const auto& e) { return e->name == name; }),
              next->end());
  list_ = std::move(next);
}

std::shared_ptr<const SourceSet::List> SourceSet::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return list_;
}

size_t SourceSet::size() const { return Snapshot()->size(); }

double SourceSet::TickInterval() const {
  double best = 0;
  for (const auto& e : *Snapshot()) {
    const double t = e->source->TickInterval();
    if (t > 0 && (best == 0 || t < best)) best = t;
  }
  return best;
}

std::vector<std::string> SourceSet::Names() const {
  std::vector<std::string> out;
  for (const auto& e : *Snapshot()) out.push_back(e->name);
  return out;
}

template <typename F>
void SourceSet::Each(const char* what, F&& f) {
  const std::shared_ptr<const List> list = Snapshot();
  for (const auto& e : *list) {
    if (e->failed.load(std::memory_order_relaxed)) continue;
    std::string why;
    try {
      f(*e->source);
      continue;
    } catch (const std::exception& ex) {
      why = ex.what();
    } catch (...) {
      why = "unknown exception";
    }
    if (e->failed.exchange(true)) continue;
    try {
      std::lock_guard<std::mutex> lock(e->mu);
      e->failure = std::string("failed in ") + what + ": " + why;
      std::fprintf(stderr, "rlprof: warning: source %s %s; it is off, the rest goes on\n",
                   e->name.c_str(), e->failure.c_str());
    } catch (...) {
    }
  }
}

void SourceSet::Start(uint32_t gen) { Each("Start", [&](Source& s) { s.Start(gen); }); }
void SourceSet::Boundary(uint32_t gen) { Each("Boundary", [&](Source& s) { s.Boundary(gen); }); }
void SourceSet::Flush(uint32_t gen) { Each("Flush", [&](Source& s) { s.Flush(gen); }); }
void SourceSet::Stop(uint32_t gen) { Each("Stop", [&](Source& s) { s.Stop(gen); }); }
void SourceSet::Tick(uint32_t gen) { Each("Tick", [&](Source& s) { s.Tick(gen); }); }
void SourceSet::Drain(SourceSink& sink, uint32_t final_gen) {
  Each("Drain", [&](Source& s) { s.Drain(sink, final_gen); });
}
void SourceSet::Shutdown() { Each("Shutdown", [&](Source& s) { s.Shutdown(); }); }

std::string SourceSet::CountersJson(uint32_t gen) {
  const std::shared_ptr<const List> list = Snapshot();
  if (list->empty()) return {};
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& e : *list) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    SourceCounters c;
    std::string failure;
    if (!e->failed.load()) {
      try {
        c = e->source->Counters(gen);
      } catch (const std::exception& ex) {
        failure = std::string("failed in Counters: ") + ex.what();
      } catch (...) {
        failure = "failed in Counters";
      }
    } else {
      std::lock_guard<std::mutex> lock(e->mu);
      failure = e->failure;
    }
    if (c.empty() && failure.empty() && !e->source->ListedWhenIdle()) continue;
    for (auto& [k, v] : c) std::visit([&, &key = k](auto&& x) { o[key] = x; }, v);
    if (!failure.empty()) o["status"] = failure;
    j[e->name] = std::move(o);
  }
  if (j.empty()) return {};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace rlprof::runtime
