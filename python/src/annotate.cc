// rlprof.annotate as a C type (raw CPython API, not pybind11): `with rlprof.annotate("x"):`
// is the marker Python code calls most, and a pybind11 or Python-level class costs 3-4 empty
// context managers per use (argument conversion to std::string, a Python __enter__/__exit__
// frame each, a name copy). Here the plain-range path is: a vectorcall constructor that stores
// the str, a METH_NOARGS __enter__ that reads the clock, a METH_FASTCALL __exit__ that records
// one complete event, and names resolved through a small cache keyed by the str object.
//
// Stages (role=...) and the decorator form go through Python hooks that python/rlprof/
// profiler.py installs (_set_annotate_hooks): they drive the current Profiler, happen a few
// times per step, and keep their logic in one readable place.
//
// Thread-safety: every entry point runs with the GIL held; the name cache is protected by it.
// The open ranges of one object form a LIFO per thread, so one object may be entered again
// (nesting), by several threads, or by interleaved coroutines.
#include <Python.h>
#include <structmember.h>

#include <cstdint>
#include <vector>

#include "python/src/bindings.h"
#include "rlprof/rlprof.hpp"

#if PY_VERSION_HEX < 0x030A0000  // Py_NewRef / Py_XNewRef arrived in 3.10; the package allows 3.9
inline PyObject* Py_NewRef(PyObject* o) {
  Py_INCREF(o);
  return o;
}
inline PyObject* Py_XNewRef(PyObject* o) {
  Py_XINCREF(o);
  return o;
}
#endif

namespace rlprof::python {
namespace {

// ---- Names: str object -> stable const char* (what the runtime interns by pointer) ----

// Direct-mapped and keyed by the str object's address. A slot owns a reference to its str, so
// the address cannot be reused by another object while it is cached: a pointer match is an
// identity match and needs no content check. String literals in code are one object per code
// site, so a loop over `with rlprof.annotate("x")` hits the same slot every time.
struct NameSlot {
  PyObject* str = nullptr;  // owned reference
  const char* name = nullptr;
};
constexpr size_t kNameSlots = 256;
NameSlot g_names[kNameSlots];

const char* CachedName(PyObject* str) {
  const auto v = reinterpret_cast<uintptr_t>(str);
  NameSlot& s = g_names[((v >> 4) ^ (v >> 12)) & (kNameSlots - 1)];
  if (s.str == str) return s.name;
  Py_ssize_t n = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(str, &n);
  if (utf8 == nullptr) return nullptr;
  const char* name = InternName(std::string_view(utf8, static_cast<size_t>(n)));
  Py_INCREF(str);
  Py_XSETREF(s.str, str);
  s.name = name;
  return name;
}

// ---- The type ----

struct OpenRange {
  PyThreadState* thread;  // who entered: exits pop that thread's newest entry
  uint64_t t0;
  uint32_t gen;  // window generation at entry; 0 = none (nothing to record)
  const char* name;
};

struct Annotate {
  PyObject_HEAD
  PyObject* name;    // str or null (decorator: the function's name)
  PyObject* role;    // null for plain ranges
  PyObject* counts;  // null unless given
  PyObject* stack;   // list of profilers stages began on (stages only), for Python hooks
  uint32_t depth;    // entries open
  OpenRange first;   // the only one in the common case: no allocation
  std::vector<OpenRange>* more;  // entries 2.. when one object is entered again
};

PyObject* g_hook_enter = nullptr;     // hook(annotate) on stage __enter__
PyObject* g_hook_exit = nullptr;      // hook(annotate) on stage __exit__
PyObject* g_hook_decorate = nullptr;  // hook(annotate, fn) -> wrapper
PyObject* g_kw[3] = {nullptr, nullptr, nullptr};  // interned "name", "role", "counts"

extern PyTypeObject g_type;

// Objects of the type itself (not of subclasses) are kept on a free list when they die and
// reused by the next `rlprof.annotate(...)`: `with rlprof.annotate("x"):` then costs no
// allocation (the way CPython keeps floats and tuples). The GIL guards it; a build without
// one keeps none.
#ifdef Py_GIL_DISABLED
constexpr int kFreeMax = 0;
#else
constexpr int kFreeMax = 16;
#endif
Annotate* g_free[kFreeMax > 0 ? kFreeMax : 1];
int g_free_count = 0;

PyObject* NoneToNull(PyObject* o) { return o == Py_None ? nullptr : o; }

PyObject* Make(PyTypeObject* type, PyObject* name, PyObject* role, PyObject* counts) {
  name = NoneToNull(name);
  role = NoneToNull(role);
  counts = NoneToNull(counts);
  if ((name && !PyUnicode_Check(name)) || (role && !PyUnicode_Check(role)) ||
      (counts && !PyUnicode_Check(counts))) {
    PyErr_SetString(PyExc_TypeError, "rlprof.annotate: name, role and counts must be str or None");
    return nullptr;
  }
  PyObject* stack = nullptr;
  if (role != nullptr && (stack = PyList_New(0)) == nullptr) return nullptr;
  Annotate* a = nullptr;
  if (type == &g_type && g_free_count > 0) {
    a = g_free[--g_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(a), type);  // a reference, as tp_alloc gives
  } else {
    a = reinterpret_cast<Annotate*>(type->tp_alloc(type, 0));
  }
  if (a == nullptr) {
    Py_XDECREF(stack);
    return nullptr;
  }
  a->name = Py_XNewRef(name);
  a->role = Py_XNewRef(role);
  a->counts = Py_XNewRef(counts);
  a->stack = stack;
  a->depth = 0;
  a->more = nullptr;
  return reinterpret_cast<PyObject*>(a);
}

// annotate(name=None, role=None, counts=None), positional or by keyword, without building a
// tuple or dict (the common call is one positional str).
PyObject* Vectorcall(PyObject* type, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs == 1 && kwnames == nullptr)
    return Make(reinterpret_cast<PyTypeObject*>(type), args[0], nullptr, nullptr);
  if (nargs > 3) {
    PyErr_SetString(PyExc_TypeError, "rlprof.annotate takes at most 3 arguments");
    return nullptr;
  }
  PyObject* v[3] = {nullptr, nullptr, nullptr};
  for (Py_ssize_t i = 0; i < nargs; ++i) v[i] = args[i];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int slot = -1;
    for (int j = 0; j < 3; ++j) {
      if (key == g_kw[j] || PyUnicode_Compare(key, g_kw[j]) == 0) {
        slot = j;
        break;
      }
    }
    if (slot < 0 || v[slot] != nullptr) {
      PyErr_Format(PyExc_TypeError, "rlprof.annotate got %s keyword argument '%U'",
                   slot < 0 ? "an unexpected" : "a repeated", key);
      return nullptr;
    }
    v[slot] = args[nargs + k];
  }
  return Make(reinterpret_cast<PyTypeObject*>(type), v[0], v[1], v[2]);
}

PyObject* New(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"name", "role", "counts", nullptr};
  PyObject *name = nullptr, *role = nullptr, *counts = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:annotate", const_cast<char**>(kKeywords),
                                   &name, &role, &counts))
    return nullptr;
  return Make(type, name, role, counts);
}

void Dealloc(PyObject* self) {
  auto* a = reinterpret_cast<Annotate*>(self);
  Py_XDECREF(a->name);
  Py_XDECREF(a->role);
  Py_XDECREF(a->counts);
  Py_XDECREF(a->stack);
  delete a->more;
  a->more = nullptr;
  if (Py_TYPE(self) == &g_type && g_free_count < kFreeMax) {
    g_free[g_free_count++] = a;  // Make() initialises every field again
    return;
  }
  Py_TYPE(self)->tp_free(self);
}

PyObject* CallHook(PyObject* hook, PyObject* self, PyObject* arg = nullptr) {
  if (hook == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "rlprof.annotate: stage hooks are not installed "
                                        "(import rlprof, not rlprof._rlprof)");
    return nullptr;
  }
  PyObject* args[2] = {self, arg};
  return PyObject_Vectorcall(hook, args, arg ? 2 : 1, nullptr);
}

PyObject* Enter(PyObject* self, PyObject*) {
  auto* a = reinterpret_cast<Annotate*>(self);
  if (a->name == nullptr) {
    PyErr_SetString(PyExc_ValueError, "rlprof.annotate used as a context manager needs a name");
    return nullptr;
  }
  if (a->role != nullptr) {
    PyObject* r = CallHook(g_hook_enter, self);
    if (r == nullptr) return nullptr;
    Py_DECREF(r);
    return Py_NewRef(self);
  }
  OpenRange e{PyThreadState_Get(), 0, rlprof_window_inline(), nullptr};
  if (e.gen != 0) {
    e.name = CachedName(a->name);
    if (e.name == nullptr) return nullptr;
  }
  if (a->depth == 0) {
    a->first = e;
  } else {
    if (a->more == nullptr) a->more = new std::vector<OpenRange>;
    a->more->push_back(e);
  }
  ++a->depth;
  if (e.gen != 0) {
    // Last, so the range does not include the bookkeeping above.
    OpenRange& top = a->depth == 1 ? a->first : a->more->back();
    top.t0 = rlprof_ticks_inline();
  }
  return Py_NewRef(self);
}

// Removes and returns the newest entry of the calling thread (the newest of all if that thread
// has none, e.g. a generator resumed on another thread).
OpenRange PopEntry(Annotate* a) {
  --a->depth;
  if (a->depth == 0) return a->first;
  // Entries are [first] + *more, oldest first.
  std::vector<OpenRange>& more = *a->more;
  PyThreadState* me = PyThreadState_Get();
  size_t i = more.size();  // index into [first] + more
  while (i > 0 && more[i - 1].thread != me) --i;
  if (i == 0 && a->first.thread != me) i = more.size();
  OpenRange e;
  if (i == 0) {
    e = a->first;
    a->first = more.front();
    more.erase(more.begin());
  } else {
    e = more[i - 1];
    more.erase(more.begin() + static_cast<ptrdiff_t>(i - 1));
  }
  return e;
}

PyObject* Exit(PyObject* self, PyObject* const*, Py_ssize_t) {
  const uint64_t t1 = rlprof_ticks_inline();
  auto* a = reinterpret_cast<Annotate*>(self);
  if (a->role != nullptr) {
    PyObject* r = CallHook(g_hook_exit, self);
    if (r == nullptr) return nullptr;
    Py_DECREF(r);
    Py_RETURN_NONE;  // falsy: an exception of the body propagates
  }
  if (a->depth == 0) Py_RETURN_NONE;
  const OpenRange e = PopEntry(a);
  // A window that closed (or a new one that opened) meanwhile gets nothing: the range would
  // straddle its boundary.
  if (e.gen != 0 && rlprof_window_inline() == e.gen)
    rlprof_emit_complete(e.gen, e.name, e.t0, t1);
  Py_RETURN_NONE;
}

PyObject* Call(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* fn = nullptr;
  if ((kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) || PyTuple_GET_SIZE(args) != 1) {
    PyErr_SetString(PyExc_TypeError, "rlprof.annotate(...) decorates one function");
    return nullptr;
  }
  fn = PyTuple_GET_ITEM(args, 0);
  return CallHook(g_hook_decorate, self, fn);
}

PyObject* Repr(PyObject* self) {
  auto* a = reinterpret_cast<Annotate*>(self);
  PyObject* none = Py_None;
  return PyUnicode_FromFormat("rlprof.annotate(%R, role=%R, counts=%R)",
                              a->name ? a->name : none, a->role ? a->role : none,
                              a->counts ? a->counts : none);
}

// ---- __enter__ / __exit__ without a bound builtin method per `with` ----
//
// `with x:` looks both names up on x's type and binds each to x: through a method table, a
// PyCFunction per name and per `with`, GC-allocated and GC-tracked (CPython ≤ 3.12; 3.13 calls
// a method descriptor unbound). They are instead a descriptor of our own whose binding is a
// small object that holds only x and comes from a free list; the descriptor is also a method
// descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR), so `x.__exit__(...)` through LOAD_METHOD, and
// `with` on 3.13+, call it unbound with x first.
enum class Which : uint8_t { kEnter, kExit };

struct Method {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Which which;
};

struct Bound {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* self;  // owned: an annotate object
  Which which;
};

extern PyTypeObject g_method_type;
extern PyTypeObject g_bound_type;

PyObject* Dispatch(Which which, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames) {
  const char* what = which == Which::kEnter ? "__enter__" : "__exit__";
  if (!PyObject_TypeCheck(self, &g_type)) {
    PyErr_Format(PyExc_TypeError, "rlprof.annotate.%s needs an rlprof.annotate, got %s", what,
                 Py_TYPE(self)->tp_name);
    return nullptr;
  }
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "rlprof.annotate.%s takes no keyword arguments", what);
    return nullptr;
  }
  if (which == Which::kEnter) {
    if (nargs != 0) {
      PyErr_SetString(PyExc_TypeError, "rlprof.annotate.__enter__ takes no arguments");
      return nullptr;
    }
    return Enter(self, nullptr);
  }
  return Exit(self, args, nargs);
}

PyObject* MethodCall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  auto* m = reinterpret_cast<Method*>(callable);
  if (nargs < 1) {
    PyErr_Format(PyExc_TypeError, "unbound rlprof.annotate.%s needs the annotate object",
                 m->which == Which::kEnter ? "__enter__" : "__exit__");
    return nullptr;
  }
  return Dispatch(m->which, args[0], args + 1, nargs - 1, kwnames);
}

PyObject* BoundCall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* b = reinterpret_cast<Bound*>(callable);
  return Dispatch(b->which, b->self, args, PyVectorcall_NARGS(nargsf), kwnames);
}

#ifdef Py_GIL_DISABLED
constexpr int kBoundFreeMax = 0;
#else
constexpr int kBoundFreeMax = 32;  // the open `with` blocks of a thread each hold one (__exit__)
#endif
Bound* g_bound_free[kBoundFreeMax > 0 ? kBoundFreeMax : 1];
int g_bound_free_count = 0;

PyObject* MethodGet(PyObject* descr, PyObject* obj, PyObject*) {
  if (obj == nullptr) return Py_NewRef(descr);  // looked up on the class
  Bound* b = nullptr;
  if (g_bound_free_count > 0) {
    b = g_bound_free[--g_bound_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(b), &g_bound_type);
  } else {
    b = PyObject_New(Bound, &g_bound_type);
    if (b == nullptr) return nullptr;
  }
  b->vectorcall = BoundCall;
  b->self = Py_NewRef(obj);
  b->which = reinterpret_cast<Method*>(descr)->which;
  return reinterpret_cast<PyObject*>(b);
}

void BoundDealloc(PyObject* o) {
  auto* b = reinterpret_cast<Bound*>(o);
  PyObject* self = b->self;
  b->self = nullptr;
  if (g_bound_free_count < kBoundFreeMax) g_bound_free[g_bound_free_count++] = b;
  else PyObject_Free(b);
  Py_XDECREF(self);  // last: it may free the annotate object
}

PyObject* MethodRepr(PyObject* o) {
  return PyUnicode_FromFormat("<method '%s' of 'rlprof.annotate' objects>",
                              reinterpret_cast<Method*>(o)->which == Which::kEnter ? "__enter__"
                                                                                 : "__exit__");
}

PyObject* BoundRepr(PyObject* o) {
  auto* b = reinterpret_cast<Bound*>(o);
  return PyUnicode_FromFormat("<bound method %s of %R>",
                              b->which == Which::kEnter ? "__enter__" : "__exit__", b->self);
}

PyTypeObject g_method_type = [] {
  PyTypeObject t{};
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "rlprof._annotate_method";
  t.tp_basicsize = sizeof(Method);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  t.tp_vectorcall_offset = offsetof(Method, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_descr_get = MethodGet;
  t.tp_repr = MethodRepr;
  return t;
}();

PyTypeObject g_bound_type = [] {
  PyTypeObject t{};
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "rlprof._annotate_bound_method";
  t.tp_basicsize = sizeof(Bound);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_vectorcall_offset = offsetof(Bound, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = BoundDealloc;
  t.tp_repr = BoundRepr;
  return t;
}();

// Puts the two descriptors in the annotate type's dict (after PyType_Ready of all three).
bool InstallMethods() {
  for (Which w : {Which::kEnter, Which::kExit}) {
    Method* m = PyObject_New(Method, &g_method_type);
    if (m == nullptr) return false;
    m->vectorcall = MethodCall;
    m->which = w;
    const int rc = PyDict_SetItemString(g_type.tp_dict, w == Which::kEnter ? "__enter__" : "__exit__",
                                        reinterpret_cast<PyObject*>(m));
    Py_DECREF(m);
    if (rc < 0) return false;
  }
  PyType_Modified(&g_type);
  return true;
}

PyMemberDef g_members[] = {
    {"name", T_OBJECT, offsetof(Annotate, name), READONLY, nullptr},
    {"role", T_OBJECT, offsetof(Annotate, role), READONLY, nullptr},
    {"counts", T_OBJECT, offsetof(Annotate, counts), READONLY, nullptr},
    {"_stack", T_OBJECT, offsetof(Annotate, stack), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

constexpr const char kDoc[] =
    "annotate(name=None, role=None, counts=None)\n--\n\n"
    "A named range, as a decorator or a context manager.\n\n"
    "With `role`, it is an RL *stage* (actor_update, rollout_generate, ...): it drives the\n"
    "current Profiler's stage boundaries, so discrete configs open one capture per call.\n"
    "Without a role it is a plain range recorded inside whatever window is open. A stage\n"
    "follows the schedule the config gives it (counted by rlprof.sub_step calls while it is\n"
    "open); `counts` is accepted for compatibility and not needed. An exception closes the\n"
    "range and propagates; the decorated function is never called again.";

PyTypeObject g_type = [] {
  PyTypeObject t{};  // PyType_Ready fills ob_type and the inherited slots
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "rlprof.annotate";
  t.tp_basicsize = sizeof(Annotate);
  t.tp_dealloc = Dealloc;
  t.tp_repr = Repr;
  t.tp_call = Call;
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = kDoc;
  t.tp_members = g_members;
  t.tp_new = New;
  t.tp_vectorcall = Vectorcall;
  return t;
}();

PyObject* SetHooks(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "_set_annotate_hooks(enter, exit, decorate)");
    return nullptr;
  }
  Py_XSETREF(g_hook_enter, Py_NewRef(args[0]));
  Py_XSETREF(g_hook_exit, Py_NewRef(args[1]));
  Py_XSETREF(g_hook_decorate, Py_NewRef(args[2]));
  Py_RETURN_NONE;
}

PyMethodDef g_set_hooks = {
    "_set_annotate_hooks", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(SetHooks)),
    METH_FASTCALL, "Installs the Python functions behind stage annotations and the decorator."};

}  // namespace

void BindAnnotate(pybind11::module_& m) {
  const char* kw[3] = {"name", "role", "counts"};
  for (int i = 0; i < 3; ++i) {
    if (g_kw[i] == nullptr) g_kw[i] = PyUnicode_InternFromString(kw[i]);
    if (g_kw[i] == nullptr) throw pybind11::error_already_set();
  }
  if (PyType_Ready(&g_type) < 0 || PyType_Ready(&g_method_type) < 0 ||
      PyType_Ready(&g_bound_type) < 0 || !InstallMethods())
    throw pybind11::error_already_set();
  m.add_object("annotate", pybind11::reinterpret_borrow<pybind11::object>(
                               reinterpret_cast<PyObject*>(&g_type)));
  PyObject* f = PyCFunction_NewEx(&g_set_hooks, nullptr, m.ptr());
  if (f == nullptr) throw pybind11::error_already_set();
  m.add_object("_set_annotate_hooks", pybind11::reinterpret_steal<pybind11::object>(f));
}

}  // namespace rlprof::python
