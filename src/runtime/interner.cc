#include "src/runtime/interner.h"

#include <unordered_set>

namespace rlprof::runtime {

Interner::Interner() { Reset(); }

uint32_t Interner::InternLocked(std::string_view s) {
  auto it = by_value_.find(s);
  if (it != by_value_.end()) return it->second;
  const auto id = static_cast<uint32_t>(values_.size());
  values_.emplace_back(s);
  by_value_.emplace(std::string_view(values_.back()), id);
  return id;
}

uint32_t Interner::InternPointer(const char* p) {
  if (p == nullptr) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_pointer_.find(p);
  if (it != by_pointer_.end()) return it->second;
  const uint32_t id = InternLocked(p);
  by_pointer_.emplace(p, id);
  return id;
}

uint32_t Interner::InternString(std::string_view s) {
  if (s.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  return InternLocked(s);
}

uint32_t Interner::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint32_t>(values_.size());
}

void Interner::CopyIds(const std::vector<uint32_t>& ids, std::vector<format::StringEntry>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t id : ids)
    if (id != 0 && id < values_.size()) out->push_back({id, values_[id]});
}

std::string Interner::Lookup(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < values_.size() ? values_[id] : std::string();
}

void Interner::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  by_value_.clear();
  by_pointer_.clear();
  values_.clear();
  values_.emplace_back();  // id 0 = ""
  by_value_.emplace(std::string_view(values_.front()), 0);
}

const char* StableName(std::string_view s) {
  static std::mutex* mu = new std::mutex;
  static auto* names = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> lock(*mu);
  return names->emplace(s).first->c_str();
}

void NameCache::Clear() {
  for (Slot& s : slots_) s = Slot{};
}

}  // namespace rlprof::runtime
