import torch
import torch.distributed as dist

from engine.config import EngineConfig
from engine.utils.tracing import traced

_SYNC = EngineConfig.sync_allreduce
_TP_GROUP = None


def get_tp_group():
    global _TP_GROUP
    if _TP_GROUP is None:
        _TP_GROUP = dist.group.WORLD
    return _TP_GROUP


def _group_error(group):
    return f"no process group {group!r}: call init_process_group first"


@traced("allreduce")
def tensor_model_parallel_all_reduce(x: torch.Tensor) -> torch.Tensor:
    group = get_tp_group()
    if group is None:
        raise RuntimeError(_group_error(group))
    dist.all_reduce(x, group=group)
    if _SYNC:
        torch.cuda.synchronize()
    return x
