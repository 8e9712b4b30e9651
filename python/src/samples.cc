// rlprof._rlprof's sample records (issue 33): rlprof.sample() / rlprof.sample_use() over the C
// API's rlprof_sample_record / rlprof_sample_use (src/runtime/sample_source.h). Not a hot path:
// one call per finished sample; outside a capture window it returns after one relaxed load.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "python/src/bindings.h"
#include "rlprof/rlprof.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

using Span = std::tuple<std::string, std::optional<std::string>, int64_t, int64_t>;

bool SampleRecord(const std::string& id, int64_t submit, int64_t queued, int64_t scheduled, int64_t first_token,
                  int64_t last_token, int64_t end, int64_t prompt_tokens, int64_t completion_tokens,
                  int64_t cached_tokens, int64_t preemptions, const std::optional<std::string>& finish_reason,
                  const std::optional<std::string>& group, int64_t version_first, int64_t version_last,
                  int64_t replica, const std::vector<Span>& spans) {
  if (rlprof_window_inline() == 0) return false;
  rlprof_sample s;
  rlprof_sample_init(&s);
  s.id = id.c_str();
  s.group = group ? group->c_str() : nullptr;
  s.finish_reason = finish_reason ? finish_reason->c_str() : nullptr;
  s.submit_ns = submit;
  s.queued_ns = queued;
  s.scheduled_ns = scheduled;
  s.first_token_ns = first_token;
  s.last_token_ns = last_token;
  s.end_ns = end;
  s.prompt_tokens = prompt_tokens;
  s.completion_tokens = completion_tokens;
  s.cached_tokens = cached_tokens;
  s.preemptions = preemptions;
  s.version_first = version_first;
  s.version_last = version_last < 0 ? version_first : version_last;
  s.replica = replica;
  std::vector<rlprof_sample_span> c_spans;
  c_spans.reserve(spans.size());
  for (const Span& sp : spans) {
    const auto& label = std::get<1>(sp);
    c_spans.push_back({std::get<0>(sp).c_str(), label ? label->c_str() : nullptr, std::get<2>(sp), std::get<3>(sp)});
  }
  s.spans = c_spans.data();
  s.n_spans = static_cast<uint32_t>(c_spans.size());
  return rlprof_sample_record(&s) == 1;
}

bool SampleUse(const std::string& id, const std::string& outcome, int64_t step, int64_t version, int64_t at) {
  if (rlprof_window_inline() == 0) return false;
  return rlprof_sample_use(id.c_str(), outcome.c_str(), step, version, at) == 1;
}

}  // namespace

void BindSamples(py::module_& m) {
  m.def("sample_record", &SampleRecord, py::arg("id"), py::arg("submit") = 0, py::arg("queued") = 0,
        py::arg("scheduled") = 0, py::arg("first_token") = 0, py::arg("last_token") = 0, py::arg("end") = 0,
        py::arg("prompt_tokens") = -1, py::arg("completion_tokens") = -1, py::arg("cached_tokens") = -1,
        py::arg("preemptions") = -1, py::arg("finish_reason") = py::none(), py::arg("group") = py::none(),
        py::arg("version_first") = -1, py::arg("version_last") = -1, py::arg("replica") = -1,
        py::arg("spans") = std::vector<Span>{},
        "One finished sample's life (times: time.monotonic_ns()); False when not recorded.");
  m.def("sample_use", &SampleUse, py::arg("id"), py::arg("outcome"), py::arg("step") = -1, py::arg("version") = -1,
        py::arg("at") = 0, "What became of sample `id`: 'consumed' or why it was dropped.");
  m.def("sample_kept", [](const std::string& id) { return rlprof_sample_kept(id.c_str()) == 1; }, py::arg("id"),
        "Whether the config's sample_rate keeps sample `id` (the same answer in every process).");
}

}  // namespace rlprof::python
