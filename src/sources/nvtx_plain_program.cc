// A program that knows nothing of rlprof: it only includes NVTX3's header and annotates an
// RL-shaped loop the way verl / vLLM / Megatron code does. nvtx_test runs it with
// NVTX_INJECTION64_PATH = librlprof_nvtx.so and an rlprof config, and checks the capture.
//
//   nvtx_plain_program [steps]
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace {

void Busy(int us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

void Range(nvtxDomainHandle_t d, nvtxStringHandle_t name, uint32_t category, int us) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = category;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  nvtxDomainRangePushEx(d, &a);
  Busy(us);
  nvtxDomainRangePop(d);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 3;
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "trainer main");
  nvtxDomainHandle_t engine = nvtxDomainCreateA("vllm");
  nvtxDomainNameCategoryA(engine, 1, "decode");
  nvtxStringHandle_t execute = nvtxDomainRegisterStringA(engine, "execute_model");
  for (int step = 1; step <= steps; ++step) {
    nvtxRangePushA("step");
    nvtxRangePushA("rollout_generate");                // a stage of rlprof's vocabulary
    for (int i = 0; i < 4; ++i) Range(engine, execute, 1, 200);
    nvtxRangePop();
    nvtxRangeId_t sync = nvtxRangeStartA("weight_sync_wait");  // ends on another thread
    std::thread([sync] {
      Busy(100);
      nvtxRangeEnd(sync);
    }).join();
    nvtxRangePushA("update_actor");                    // verl's marked_timer name
    nvtxRangePushA("forward_backward_pass");
    nvtxMarkA("loss ready");
    Busy(300);
    nvtxRangePop();
    nvtxRangePushW(L"optimizer_step \u03b8");          // a wide string
    Busy(100);
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
  }
  return 0;
}
