#include "python/src/torch_stack.h"

#include <Python.h>
#include <frameobject.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/sources/torch_ops.h"

namespace rlprof::python {
namespace {

struct FrameKey {
  PyCodeObject* code;  // a strong reference while cached
  int line;
  bool operator==(const FrameKey& o) const { return code == o.code && line == o.line; }
};

struct Cached {
  std::vector<FrameKey> frames;
  uint32_t id;
};

// Per thread, per window: stacks by hash of their frames. The cache holds references to its
// code objects (so an address is never reused while cached) and drops them, with the GIL
// held, when the window changes.
struct StackCache {
  uint32_t gen = 0;
  std::unordered_multimap<uint64_t, Cached> stacks;
  void Clear() {
    for (auto& [h, c] : stacks)
      for (const FrameKey& f : c.frames) Py_DECREF(reinterpret_cast<PyObject*>(f.code));
    stacks.clear();
  }
};
thread_local StackCache* t_cache = nullptr;  // leaked at thread exit (the GIL may be gone)

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

void AppendText(std::string* out, PyCodeObject* code, int line) {
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  const char* func = PyUnicode_AsUTF8(code->co_name);
  if (file == nullptr || func == nullptr) PyErr_Clear();
  if (!out->empty()) out->push_back('\n');
  out->append(file != nullptr ? file : "?");
  out->push_back(':');
  out->append(std::to_string(line));
  out->push_back(':');
  out->append(func != nullptr ? func : "?");
}

}  // namespace

uint32_t CaptureStack() {
  if (!Py_IsInitialized() || Finalizing()) return 0;
  if (PyGILState_GetThisThreadState() == nullptr) return 0;  // not a Python thread
  const sources::RuntimeLink& link = sources::BoundRuntime();
  const uint32_t gen = link.window_gen->load(std::memory_order_relaxed);
  if (gen == 0) return 0;
  const PyGILState_STATE gil = PyGILState_Ensure();
  uint32_t id = 0;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame != nullptr) {
    Py_INCREF(frame);
    FrameKey keys[kStackDepth];
    int n = 0;
    uint64_t hash = 1469598103934665603ull;
    while (frame != nullptr && n < kStackDepth) {
      PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
      const int line = PyFrame_GetLineNumber(frame);
      keys[n++] = {code, line};
      hash = (hash ^ reinterpret_cast<uintptr_t>(code)) * 1099511628211ull;
      hash = (hash ^ static_cast<uint64_t>(line)) * 1099511628211ull;
      PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
      Py_DECREF(frame);
      frame = back;
    }
    Py_XDECREF(frame);
    StackCache* cache = t_cache;
    if (cache == nullptr) cache = t_cache = new StackCache;
    if (cache->gen != gen) {
      cache->Clear();
      cache->gen = gen;
    }
    auto [lo, hi] = cache->stacks.equal_range(hash);
    for (auto it = lo; it != hi && id == 0; ++it) {
      const auto& f = it->second.frames;
      if (static_cast<int>(f.size()) == n && std::equal(f.begin(), f.end(), keys))
        id = it->second.id;
    }
    if (id == 0) {
      std::string text;
      for (int i = 0; i < n; ++i) AppendText(&text, keys[i].code, keys[i].line);
      id = link.intern(text);
      cache->stacks.emplace(hash, Cached{std::vector<FrameKey>(keys, keys + n), id});
    } else {
      for (int i = 0; i < n; ++i) Py_DECREF(reinterpret_cast<PyObject*>(keys[i].code));
    }
  }
  PyGILState_Release(gil);
  return id;
}

}  // namespace rlprof::python
