"""Worker.profile(is_start=True): what vLLM's engine.start_profile()/stop_profile() (verl's
rollout start_profile) reach in each worker process."""


class Worker:
    def __init__(self, model_runner) -> None:
        self.model_runner = model_runner
        self.profiling = False

    def profile(self, is_start: bool = True, profile_prefix=None) -> None:
        self.profiling = is_start

    def execute_model(self, scheduler_output):
        return self.model_runner.execute_model(scheduler_output)
