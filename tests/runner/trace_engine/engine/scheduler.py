from engine.config import EngineConfig
from engine.model_runner import ModelRunner, make_batch


class Scheduler:
    def __init__(self, config: EngineConfig):
        self.runner = ModelRunner(config)
        self.batch = make_batch(config)

    def step(self):
        return self.runner.forward(self.batch)
