#include "src/sources/nvtx_names.h"

#include <cctype>
#include <string>

#include "rlprof/rlprof.h"

namespace rlprof::sources::nvtx {

const char* StableCopy(std::string_view s) {
  const char* c = rlprof_intern_name(std::string(s).c_str());
  return c != nullptr ? c : "";
}

namespace {
// "step", "train_step", "step 3", "step_3", "step:3", "step-3" → 0 / 3; else -1.
int64_t StepNumber(std::string_view s) {
  if (s == "step" || s == "train_step" || s == "training_step") return 0;
  if (s.size() < 6 || s.substr(0, 4) != "step") return -1;
  const char sep = s[4];
  if (sep != ' ' && sep != '_' && sep != ':' && sep != '-') return -1;
  int64_t n = 0;
  for (char c : s.substr(5)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || n > 1'000'000'000) return -1;
    n = n * 10 + (c - '0');
  }
  return n > 0 ? n : -1;
}
}  // namespace

void Classify(NameEntry* e) {
  const std::string_view s(e->copy, e->len);
  e->stage = e->stage_role = nullptr;
  e->step = -1;
  // librlprof's stage vocabulary (every name and alias of config/stages.h).
  const std::string text(s);
  char role[128], stage[256];
  if (rlprof_stage_role(text.c_str(), role, sizeof role) == RLPROF_OK && role[0] != '\0' &&
      rlprof_canonical_stage(text.c_str(), stage, sizeof stage) == RLPROF_OK) {
    e->stage = StableCopy(stage);  // stable copies: live as long as the process
    e->stage_role = StableCopy(role);
    return;
  }
  e->step = StepNumber(s);
}

const NameEntry& NameCache::Fill(NameEntry& e, const char* p) {
  const std::string_view s(p, ::strnlen(p, 4096));
  e.ptr = p;
  e.copy = StableCopy(s);
  e.len = static_cast<uint32_t>(s.size());
  e.id = 0;
  e.id_gen = 0;
  Classify(&e);
  return e;
}

}  // namespace rlprof::sources::nvtx
