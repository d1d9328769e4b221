"""Time a repository's communicator allreduce on CPU: one gloo rank, one large tensor.

Run from the root of a checkout of the sample repository (`examples/sample_repo.py`):
``python communicator_bench.py [MiB]``. It calls the checkout's own
``mini_engine.distributed.pynccl.PyNcclCommunicator.all_reduce`` and prints one
``PERFBOT_METRIC comm_allreduce_ms=...`` line (the median of the timed calls), as the `command`
suite reads it. With a single rank the collective itself costs next to nothing, so what the
communicator does around it (an out-of-place copy, say) is what the number shows.

With ``BISECT_RUNS_LOG`` set, each round appends one JSON line to that file: its side and round, the
worktree it ran in, the commit checked out there, the file it imported the communicator from (and
that file's digest), and the value it printed; the bisect test checks each against the commit the
run named.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import statistics
import subprocess
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
    value = statistics.median(times)
    if os.environ.get("BISECT_RUNS_LOG"):
        log(os.environ["BISECT_RUNS_LOG"], sys.modules[PyNcclCommunicator.__module__].__file__, value)
    print(f"PERFBOT_METRIC comm_allreduce_ms={value} unit=ms better=lower")


def log(path: str, imported: str, value: float) -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    with open(imported, "rb") as source:
        digest = hashlib.sha256(source.read()).hexdigest()
    entry = {
        "side": os.environ.get("PERFBOT_SIDE"),
        "round": os.environ.get("PERFBOT_ROUND"),
        "cwd": os.getcwd(),
        "commit": commit.stdout.strip(),
        "imported": imported,
        "digest": digest,
        "value": value,
    }
    with open(path, "a") as stream:
        stream.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    main()
