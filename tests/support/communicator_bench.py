"""Time a repository's communicator allreduce on CPU: one gloo rank, one large tensor.

Run from the root of a checkout of the sample repository (`examples/sample_repo.py`):
``python communicator_bench.py [MiB]``. It calls the checkout's own
``mini_engine.distributed.pynccl.PyNcclCommunicator.all_reduce`` and prints one
``PERFBOT_METRIC comm_allreduce_ms=...`` line (the median of the timed calls), as the `command`
suite reads it. With a single rank the collective itself costs next to nothing, so what the
communicator does around it (an out-of-place copy, say) is what the number shows.
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    sys.path.insert(0, os.getcwd())
    from mini_engine.distributed.pynccl import PyNcclCommunicator

    mib = float(sys.argv[1]) if len(sys.argv) > 1 else 16.0
    torch.set_num_threads(1)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    communicator = PyNcclCommunicator()
    tensor = torch.ones(int(mib * 2**20 / 4))
    times = []
    for call in range(30):
        start = time.perf_counter()
        communicator.all_reduce(tensor)
        if call >= 5:
            times.append((time.perf_counter() - start) * 1000)
    dist.destroy_process_group()
    print(f"PERFBOT_METRIC comm_allreduce_ms={statistics.median(times)} unit=ms better=lower")


if __name__ == "__main__":
    main()
