// nn.Module hierarchy as ranges (`contents: [module]`): the Python package's global forward
// pre/post hooks (python/rlprof/torch.py, installed only while a capture window is open) call
// Enter/Exit around every module's forward; each becomes a kModule complete event on the
// calling thread: name = qualified path (`TinyLM.layers.3.attn`), arg0 = depth, arg1 = class.
// Operators recorded on the same thread nest under them by time, so the analysis can group
// operator time by module path.
//
//   ModuleRanges::Enter(key, "TinyLM.layers.0", "Block");   // key: the module's identity
//   ...  forward  ...
//   ModuleRanges::Exit(key);
//
// A forward that raises and never reports its end is closed when an enclosing module exits
// (ranges above it are dropped, not guessed); an Exit for a key not entered is ignored.
// Thread-safety: per-thread stacks; any thread.
#ifndef RLPROF_SRC_SOURCES_TORCH_MODULES_H_
#define RLPROF_SRC_SOURCES_TORCH_MODULES_H_

#include <atomic>
#include <cstdint>
#include <string_view>

namespace rlprof::sources {

class ModuleRanges {
 public:
  static void Enter(uintptr_t key, std::string_view path, std::string_view cls);
  static void Exit(uintptr_t key);
  // Modules recorded so far (process-wide), and ranges dropped because their end was missed.
  static uint64_t recorded();
  static uint64_t dropped();
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_TORCH_MODULES_H_
