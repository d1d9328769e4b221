import torch

from engine.config import EngineConfig
from engine.layers.linear import RowParallelLinear


class ModelRunner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.layers = [RowParallelLinear(config.hidden) for _ in range(config.layers)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer.forward(x)
        return x


def make_batch(config: EngineConfig, tokens: int = 8) -> torch.Tensor:
    return torch.randn(tokens, config.hidden)
