"""Profile the engine's steps on the CPU (one gloo rank) as an engine's --profile does: the Chrome
trace of torch.profiler with Python stacks, gzipped, to the file named on the command line."""

import gzip
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
from engine.config import EngineConfig
from engine.scheduler import Scheduler
from torch.profiler import ProfilerActivity, profile, schedule


def main(out: str) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    scheduler = Scheduler(EngineConfig())
    with tempfile.TemporaryDirectory() as folder:
        plain = os.path.join(folder, "trace.json")
        with profile(
            activities=[ProfilerActivity.CPU],
            with_stack=True,
            schedule=schedule(wait=0, warmup=1, active=3),
            on_trace_ready=lambda done: done.export_chrome_trace(plain),
        ) as profiler:
            for _ in range(4):
                scheduler.step()
                profiler.step()
        with open(plain, "rb") as source, gzip.open(out, "wb") as target:
            shutil.copyfileobj(source, target)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
