// CuptiApi: the CUPTI entry points the CUPTI source uses, resolved with dlopen/dlsym at run time
// so that nothing links against CUDA and the same binary runs on machines without it.
//
//   CuptiApi api;
//   std::string why;
//   if (!api.Load(getenv, &why)) { /* one info line: no device capture */ }
//   api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
//
// Search order (first that loads and exports the required symbols): $RLPROF_CUPTI_LIBRARY (alone
// when set: tests point it at the fake CUPTI); libcupti.so.13/.12 and libcupti.so through the
// dynamic loader (ldconfig, LD_LIBRARY_PATH); $CUDA_HOME / $CUDA_PATH and /usr/local/cuda*
// (lib64, extras/CUPTI/lib64); the nvidia-cuda-cupti wheel's lib dir (nvidia/cu13/lib,
// nvidia/cuda_cupti/lib) under every directory in $RLPROF_PYTHON_SITE (':'-separated), the
// site-packages holding this code (the Python extension), then $VIRTUAL_ENV; sonames
// libcupti.so.13, .12, .11.8, .11.7. A candidate already loaded in the process (PyTorch's) is
// taken before any other, and only it. A library whose CUPTI API version is older than CUDA
// 11.7's (17) is refused: the activity-record fields rlprof reads lie at the same offsets in
// every release from CUDA 11.7 to 13.5 (test/data/cupti/record_layouts.txt, CuptiLayoutTest).
// Optional entry points (timestamp callback, per-cbid runtime API enables, external
// correlation, thread-id type) are null when the library lacks them.
// Thread-safety: Load once; the pointers are then read-only.
#ifndef RLPROF_SRC_SOURCES_CUPTI_API_H_
#define RLPROF_SRC_SOURCES_CUPTI_API_H_

#include <cupti.h>

#include <string>
#include <vector>

namespace rlprof::sources {

using EnvFn = const char* (*)(const char*);

struct CuptiApi {
  // Required.
  CUptiResult (*GetVersion)(uint32_t*) = nullptr;
  CUptiResult (*Subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*ActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*GetTimestamp)(uint64_t*) = nullptr;
  CUptiResult (*GetResultString)(CUptiResult, const char**) = nullptr;
  // Optional.
  CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*ActivityPushExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t) = nullptr;
  CUptiResult (*ActivityPopExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t*) = nullptr;
  CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType) = nullptr;
  CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;

  // CUDA 11.7's CUPTI API version: the oldest release whose record layouts were checked.
  static constexpr uint32_t kMinApiVersion = 17;

  void* handle = nullptr;
  std::string path;  // the library loaded
  uint32_t version = 0;  // cuptiGetVersion: 17 (CUDA 11.7) … 28 (12.9), then 130001 (13.0) …
  bool already_loaded = false;  // it was in the process before rlprof looked

  // Loads the first usable library (search order above). False: `why` lists what was tried.
  bool Load(EnvFn env, std::string* why);
  std::string ResultString(CUptiResult r) const;
  // Why device capture is off when cuptiSubscribe answered `r` (the manifest's status after
  // "off: "; `rlprof doctor` says the same).
  std::string SubscribeFailure(CUptiResult r) const;
  // The candidates Load tries, in order (for docs and tests).
  static std::vector<std::string> Candidates(EnvFn env);
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_CUPTI_API_H_
