"""The SchedulerOutput fields a model runner reads for one engine step (vLLM's names)."""
from dataclasses import dataclass, field
from typing import Dict, List


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: List[object]            # requests whose prompt runs this step
    num_scheduled_tokens: Dict[str, int]        # tokens per request this step
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: Dict[str, List[int]] = field(default_factory=dict)
    finished_req_ids: set = field(default_factory=set)
