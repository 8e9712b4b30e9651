// Fuzz target: capture manifests (manifest.json), read leniently by format::ParseManifest and
// summarised by Capture::Label as the analysis tools do. Seeds: test/fuzz/corpus/manifest
// (the manifests of test/golden/analysis/inputs); dictionary: test/fuzz/dict/json.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/format/capture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> diagnostics;
  rlprof::format::Capture c;
  c.manifest = rlprof::format::ParseManifest(std::string(reinterpret_cast<const char*>(data), size),
                                             &diagnostics);
  c.has_manifest = true;
  (void)c.Label();
  return 0;
}
