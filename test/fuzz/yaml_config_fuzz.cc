// Fuzz target: YAML profiler configs (verl Gen 1/2/3, MindSpeed-RL, rlprof's own block),
// loaded by config::LoadPlanFromString with no overrides. Seeds: test/fuzz/corpus/yaml_config
// (examples/configs, test/golden/config_errors, cut fixture configs); dictionary:
// test/fuzz/dict/yaml.dict.
#include <cstddef>
#include <cstdint>
#include <string>

#include "test/fuzz/config_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::fuzz::LoadConfigInput(std::string(reinterpret_cast<const char*>(data), size), {});
  return 0;
}
