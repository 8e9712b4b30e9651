// Python call stacks of operators (`contents: [stack]`): the stack function of
// src/sources/torch_ops.h, called by the operator callback at the start of each outermost
// operator. It reads the calling thread's own Python frames — only on threads that have a
// Python thread state (torch's autograd and worker threads have none: their operators get no
// stack) — taking the GIL the way torch's own profiler does for with_stack (torch releases it
// around operator dispatch; re-taking it is cheap when no other thread runs Python).
// Frames are "file:line:function", innermost first, at most kStackDepth; a stack is interned
// once per window and per thread (cached by code objects and line numbers, verified).
// Thread-safety: any thread; takes the GIL.
#ifndef RLPROF_PYTHON_SRC_TORCH_STACK_H_
#define RLPROF_PYTHON_SRC_TORCH_STACK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rlprof::python {

inline constexpr int kStackDepth = 32;

// The string id of the calling thread's Python stack in the open window; 0 when it has none.
uint32_t CaptureStack();

// Where the framework packages are (e.g. {"torch", ".../site-packages/torch/"}), recorded in
// every stack from then on: a frame whose file lies under one is written "[torch] file:line:fn"
// (docs/formats.md), so the analysis tells framework frames from the user's by where the
// packages really were, not by a path's words. Set with the GIL held before any capture.
void SetFrameworkRoots(std::vector<std::pair<std::string, std::string>> roots);

}  // namespace rlprof::python

#endif  // RLPROF_PYTHON_SRC_TORCH_STACK_H_
