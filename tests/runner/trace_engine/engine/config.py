from dataclasses import dataclass


@dataclass
class EngineConfig:
    hidden: int = 32
    layers: int = 2
    sync_allreduce: bool = False
