#include "python/src/torch_stack.h"

#include <Python.h>
#include <frameobject.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/sources/torch_ops.h"

namespace rlprof::python {
namespace {

// A frame: its code and position. The position is the last instruction's offset where the
// interpreter exposes it (3.11+: cheap), turned into a line number only when a stack is first
// seen (PyCode_Addr2Line scans the line table); else the line number itself.
struct FrameKey {
  PyCodeObject* code;  // a strong reference while cached
  int pos;
  bool operator==(const FrameKey& o) const { return code == o.code && pos == o.pos; }
};

inline int Position(PyFrameObject* f) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFrame_GetLasti(f);
#else
  return PyFrame_GetLineNumber(f);
#endif
}

inline int LineOf(const FrameKey& k) {
#if PY_VERSION_HEX >= 0x030B0000
  return k.pos < 0 ? -1 : PyCode_Addr2Line(k.code, k.pos);
#else
  return k.pos;
#endif
}

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

// Set before the first capture, with the GIL held; read with the GIL held.
std::vector<std::pair<std::string, std::string>> g_roots;  // (label, directory ending in '/')

void AppendText(std::string* out, PyCodeObject* code, int line) {
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  const char* func = PyUnicode_AsUTF8(code->co_name);
  if (file == nullptr || func == nullptr) PyErr_Clear();
  if (!out->empty()) out->push_back('\n');
  if (file != nullptr)
    for (const auto& [label, dir] : g_roots)
      if (std::char_traits<char>::length(file) > dir.size() && std::string_view(file).substr(0, dir.size()) == dir) {
        out->append("[" + label + "] ");
        break;
      }
  out->append(file != nullptr ? file : "?");
  out->push_back(':');
  out->append(std::to_string(line));
  out->push_back(':');
  out->append(func != nullptr ? func : "?");
}

}  // namespace

void SetFrameworkRoots(std::vector<std::pair<std::string, std::string>> roots) {
  for (auto& [label, dir] : roots)
    if (!dir.empty() && dir.back() != '/') dir.push_back('/');
  g_roots = std::move(roots);
}

uint32_t CaptureStack() {
  if (!Py_IsInitialized() || Finalizing()) return 0;
  if (PyGILState_GetThisThreadState() == nullptr) return 0;  // not a Python thread
  const uint32_t gen = sources::RuntimeWindow();
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
      const int pos = Position(frame);
      keys[n++] = {code, pos};
      hash = (hash ^ reinterpret_cast<uintptr_t>(code)) * 1099511628211ull;
      hash = (hash ^ static_cast<uint64_t>(static_cast<uint32_t>(pos))) * 1099511628211ull;
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
      for (int i = 0; i < n; ++i) AppendText(&text, keys[i].code, LineOf(keys[i]));
      id = sources::RuntimeIntern(text);
      cache->stacks.emplace(hash, Cached{std::vector<FrameKey>(keys, keys + n), id});
    } else {
      for (int i = 0; i < n; ++i) Py_DECREF(reinterpret_cast<PyObject*>(keys[i].code));
    }
  }
  PyGILState_Release(gil);
  return id;
}

}  // namespace rlprof::python
