import torch

from engine import envs
from engine.distributed.parallel_state import tensor_model_parallel_all_reduce


class RowParallelLinear:
    def __init__(self, hidden: int):
        self.weight = torch.randn(hidden, hidden) / hidden**0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = tensor_model_parallel_all_reduce(x @ self.weight)
        if envs.ENGINE_CHECK_FINITE and not torch.isfinite(out).all():
            raise FloatingPointError("non-finite activations")
        return torch.relu(out)
