/* Compiled as C: the public C header must stay valid C. Called from c_api_test.cc. */
#include "rlprof/rlprof.h"

int RlprofCRecordStep(int64_t step) {
  int rc = rlprof_step_begin(step);
  if (rc != RLPROF_OK) return rc;
  rlprof_stage_begin("actor", "actor_update");
  rlprof_range_id r = rlprof_range_start("c range");
  rlprof_mark("c mark");
  rlprof_counter("c counter", 1.5);
  rlprof_sub_step(RLPROF_SUB_STEP_MINI_BATCH);
  rlprof_range_end(r);
  rlprof_stage_end();
  return rlprof_step_end();
}
