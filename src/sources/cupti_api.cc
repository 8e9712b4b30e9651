#include "src/sources/cupti_api.h"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstring>

namespace rlprof::sources {
namespace {

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.rbegin(), out.rend());  // newest CUDA first (cuda-13.0 before cuda-12.8)
  return out;
}

void AddCudaRoot(const std::string& root, std::vector<std::string>* out) {
  for (const char* sub : {"/lib64/libcupti.so", "/extras/CUPTI/lib64/libcupti.so",
                          "/targets/x86_64-linux/lib/libcupti.so", "/lib/libcupti.so"})
    out->push_back(root + sub);
}

void AddSitePackages(const std::string& site, std::vector<std::string>* out) {
  for (const char* sub : {"/nvidia/cu13/lib/libcupti.so.13", "/nvidia/cuda_cupti/lib/libcupti.so.13",
                          "/nvidia/cuda_cupti/lib/libcupti.so.12", "/nvidia/cuda_cupti/lib/libcupti.so.11.8",
                          "/nvidia/cuda_cupti/lib/libcupti.so.11.7"})
    out->push_back(site + sub);
}

}  // namespace

std::vector<std::string> CuptiApi::Candidates(EnvFn env) {
  std::vector<std::string> out;
  if (const char* p = env("RLPROF_CUPTI_LIBRARY"); p != nullptr && *p != '\0') {
    out.emplace_back(p);
    return out;  // explicit: nothing else
  }
  out = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8", "libcupti.so.11.7", "libcupti.so"};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* r = env(var); r != nullptr && *r != '\0') AddCudaRoot(r, &out);
  AddCudaRoot("/usr/local/cuda", &out);
  for (const std::string& r : Glob("/usr/local/cuda-*")) AddCudaRoot(r, &out);
  if (const char* sites = env("RLPROF_PYTHON_SITE"); sites != nullptr) {
    std::string s = sites;
    size_t b = 0;
    while (b <= s.size()) {
      const size_t e = std::min(s.find(':', b), s.size());
      if (e > b) AddSitePackages(s.substr(b, e - b), &out);
      b = e + 1;
    }
  }
  // The site-packages this code was loaded from (the Python package's extension), where pip puts
  // the nvidia-cuda-cupti wheel next to torch.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&AddSitePackages), &info) != 0 && info.dli_fname != nullptr) {
    // site-packages/rlprof/_rlprof*.so (the extension), site-packages/rlprof/_bin/rlprof (the
    // command pip installs: `rlprof doctor`).
    std::string self = info.dli_fname;
    for (int up = 0; up < 3 && self.find('/') != std::string::npos; ++up) {
      self.resize(self.rfind('/'));
      if (self.ends_with("site-packages") || self.ends_with("dist-packages")) {
        AddSitePackages(self, &out);
        break;
      }
    }
  }
  if (const char* venv = env("VIRTUAL_ENV"); venv != nullptr && *venv != '\0')
    for (const std::string& site : Glob(std::string(venv) + "/lib/python3*/site-packages"))
      AddSitePackages(site, &out);
  return out;
}

bool CuptiApi::Load(EnvFn env, std::string* why) {
  std::vector<std::string> order = Candidates(env);
  // A libcupti already in the process (PyTorch's, loaded by torch.profiler or a CUDA library)
  // is the only one to try: a second CUPTI of another release in one process would fight over
  // the driver.
  bool in_process = false;
  for (const std::string& cand : order)
    if (void* h = dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD); h != nullptr) {
      dlclose(h);  // the probe's reference
      order = {cand};
      in_process = true;
      break;
    }
  std::string tried;
  bool refused = false;
  for (const std::string& cand : order) {
    void* h = dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      if (tried.size() < 600) tried += (tried.empty() ? "" : ", ") + cand;
      continue;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      return fn != nullptr;
    };
    const bool ok = sym(GetVersion, "cuptiGetVersion") && sym(Subscribe, "cuptiSubscribe") &&
                    sym(Unsubscribe, "cuptiUnsubscribe") &&
                    sym(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks") &&
                    sym(ActivityEnable, "cuptiActivityEnable") &&
                    sym(ActivityDisable, "cuptiActivityDisable") &&
                    sym(ActivityFlushAll, "cuptiActivityFlushAll") &&
                    sym(ActivityGetNextRecord, "cuptiActivityGetNextRecord") &&
                    sym(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords") &&
                    sym(GetTimestamp, "cuptiGetTimestamp") &&
                    sym(GetResultString, "cuptiGetResultString");
    if (!ok) {
      tried += (tried.empty() ? "" : ", ") + cand + " (not CUPTI: a required symbol is missing)";
      dlclose(h);
      continue;
    }
    uint32_t v = 0;
    if (GetVersion(&v) != CUPTI_SUCCESS || v < kMinApiVersion) {
      // Its activity records may be laid out otherwise than those of the releases checked
      // (test/data/cupti/record_layouts.txt): reading them would be guessing.
      tried += (tried.empty() ? "" : ", ") + cand + " (CUPTI API version " + std::to_string(v) +
               ", older than CUDA 11.7's " + std::to_string(kMinApiVersion) + ")";
      refused = true;
      dlclose(h);
      continue;
    }
    sym(ActivityRegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
    sym(ActivityEnableRuntimeApi, "cuptiActivityEnableRuntimeApi");
    sym(ActivityPushExternalCorrelationId, "cuptiActivityPushExternalCorrelationId");
    sym(ActivityPopExternalCorrelationId, "cuptiActivityPopExternalCorrelationId");
    sym(SetThreadIdType, "cuptiSetThreadIdType");
    sym(GetCallbackName, "cuptiGetCallbackName");
    handle = h;
    path = cand;
    version = v;
    already_loaded = in_process;
    return true;
  }
  if (why != nullptr) {
    *why = refused ? "no libcupti rlprof can read (tried " + tried +
                         "; rlprof reads the activity records of CUDA 11.7 to 13.5)"
                   : "libcupti not found (tried " + tried + ")";
    if (in_process) *why += "; it is the libcupti this process had loaded, so no other was tried";
  }
  return false;
}

std::string CuptiApi::ResultString(CUptiResult r) const {
  const char* s = nullptr;
  if (GetResultString != nullptr && GetResultString(r, &s) == CUPTI_SUCCESS && s != nullptr)
    return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

std::string CuptiApi::SubscribeFailure(CUptiResult r) const {
  return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
             ? "another CUPTI subscriber (torch.profiler/Kineto, nsys, …) holds CUPTI"
             : "cuptiSubscribe failed: " + ResultString(r);
}

}  // namespace rlprof::sources
