"""GPUModelRunner.execute_model(scheduler_output, intermediate_tensors=None): runs the model
for the tokens the scheduler chose (vLLM's signature); here a tiny torch model."""
from typing import Any, Optional


class GPUModelRunner:
    def __init__(self, model: Any) -> None:
        self.model = model

    def execute_model(self, scheduler_output: Any, intermediate_tensors: Optional[Any] = None
                      ) -> Any:
        return self.model(scheduler_output)
