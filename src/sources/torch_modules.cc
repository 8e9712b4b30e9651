#include "src/sources/torch_modules.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "rlprof/format/event.h"
#include "src/sources/torch_ops.h"

namespace rlprof::sources {
namespace {

std::atomic<uint64_t> g_recorded{0};
std::atomic<uint64_t> g_dropped{0};

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Open {
  uintptr_t key;
  uint64_t t0;
  uint32_t gen, name, cls, depth;
};

struct ModuleState {
  uint32_t gen = 0;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> ids;  // this window's
  std::vector<Open> open;
};
thread_local ModuleState t_modules;

uint32_t Id(ModuleState& s, std::string_view text) {
  auto it = s.ids.find(text);
  if (it == s.ids.end()) it = s.ids.emplace(std::string(text), RuntimeIntern(text)).first;
  return it->second;
}

}  // namespace

void ModuleRanges::Enter(uintptr_t key, std::string_view path, std::string_view cls) {
  const uint32_t gen = RuntimeWindow();
  if (gen == 0) return;
  ModuleState& s = t_modules;
  if (s.gen != gen) {
    s.ids.clear();
    s.open.clear();  // ranges of an earlier window never end in this one
    s.gen = gen;
  }
  Open o{key, 0, gen, Id(s, path), Id(s, cls), static_cast<uint32_t>(s.open.size())};
  o.t0 = RuntimeTicks();
  s.open.push_back(o);
}

void ModuleRanges::Exit(uintptr_t key) {
  const uint64_t t1 = RuntimeTicks();
  ModuleState& s = t_modules;
  size_t i = s.open.size();
  while (i > 0 && s.open[i - 1].key != key) --i;
  if (i == 0) return;  // not entered in this window (it opened inside the forward)
  const Open o = s.open[i - 1];
  g_dropped.fetch_add(s.open.size() - i, std::memory_order_relaxed);
  s.open.resize(i - 1);
  if (RuntimeWindow() != o.gen) return;  // closed meanwhile
  format::Event e{};
  e.ts_ns = static_cast<int64_t>(o.t0);
  e.payload = static_cast<int64_t>(t1 - o.t0);
  e.name = o.name;
  e.kind = format::EventKind::kComplete;
  e.category = format::Category::kModule;
  e.arg0 = o.depth;
  e.arg1 = o.cls;
  RuntimeEmit(o.gen, e);
  g_recorded.fetch_add(1, std::memory_order_relaxed);
}

uint64_t ModuleRanges::recorded() { return g_recorded.load(std::memory_order_relaxed); }
uint64_t ModuleRanges::dropped() { return g_dropped.load(std::memory_order_relaxed); }

}  // namespace rlprof::sources
