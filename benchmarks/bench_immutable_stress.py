"""How often a SQLite file made immutable kills a process with SIGBUS: ``--writers`` processes use
the store and the queue as fast as they can (claim, enqueue, dequeue, start, finish, count: what a
web worker and a consumer do), and one process calls `WalCheckpoints.run_if_due` in a loop as
`perfbot serve`'s master does, while every SQLite file is made immutable (``chattr +i``) for
0.3 s and writable again, ``--cycles`` times at random moments. A process that dies is started
again. Prints how many of each kind died, and how: ``-7`` is SIGBUS. The fault scenario of
`bench_faults.py` makes the files immutable once, at one moment; this one does it many times, at
many moments, under far more writing, so that a rare race shows up in a minute.

Needs root and a filesystem with ``chattr`` (ext4, xfs).

    .venv/bin/python benchmarks/bench_immutable_stress.py
    .venv/bin/python benchmarks/bench_immutable_stress.py --cycles 60 --tree /path/to/another/checkout
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def writer(folder: str, number: int, stop) -> None:
    from datetime import UTC, datetime

    from bot.adapters.queue import HueyQueue
    from bot.adapters.store.sql import SqlStore
    from bot.service.failures import Transient

    while True:
        try:
            store = SqlStore.connect(f"sqlite:///{folder}/perfbot.db", migrate_schema=False)
            queue = HueyQueue(f"sqlite:///{folder}/perfbot.queue.db")
            break
        except Transient:  # started while the files were immutable
            time.sleep(0.05)
    queue.bind(lambda _: None, lambda: None)
    for n in range(10**9):
        if stop.is_set():
            return
        try:
            delivery = store.deliveries.claim("1", f"g{number}-{os.getpid()}-{n}", "ping", None, b"x" * 2000)
            queue.enqueue(delivery)
            queue.huey.storage.dequeue()
            try:
                store.deliveries.start(delivery, 60, "w")
            except TypeError:  # a tree from before leases were judged by the database's clock
                store.deliveries.start(delivery, datetime.now(UTC), 60, "w")
            store.deliveries.finish(delivery, "done")
            store.deliveries.counts()
        except Transient:
            time.sleep(0.005)


def master(folder: str, stop, log: str) -> None:
    sys.stderr = open(log, "a", buffering=1)  # noqa: SIM115 - the process's own, to its end
    os.dup2(sys.stderr.fileno(), 2)  # the checkpointer's, if it runs in a child, too
    from bot.adapters.sqlite_files import WalCheckpoints

    checkpoints = WalCheckpoints([f"{folder}/perfbot.db", f"{folder}/perfbot.queue.db"], interval_s=0.2)
    while not stop.is_set():
        checkpoints.run_if_due()
        time.sleep(0.05)
    if hasattr(checkpoints, "stop"):
        checkpoints.stop()


def stress(folder: Path, cycles: int, writers: int) -> str:
    from bot.adapters.queue import HueyQueue
    from bot.adapters.store.sql import SqlStore

    SqlStore.connect(f"sqlite:///{folder}/perfbot.db").engine.dispose()
    HueyQueue(f"sqlite:///{folder}/perfbot.queue.db")
    spawn = multiprocessing.get_context("spawn")
    stop, log = spawn.Event(), str(folder.parent / "master.log")
    running: dict = {}

    def start(kind: str, number: int = 0) -> None:
        if kind == "writer":
            process = spawn.Process(target=writer, args=(str(folder), number, stop))
        else:
            process = spawn.Process(target=master, args=(str(folder), stop, log))
        process.start()
        running[process] = kind

    for number in range(writers):
        start("writer", number)
    start("master")
    time.sleep(3)
    died: collections.Counter = collections.Counter()
    for _ in range(cycles):
        time.sleep(random.uniform(0.2, 0.6))
        files = sorted(str(p) for p in folder.iterdir() if ".db" in p.name)
        subprocess.run(["chattr", "+i", *files], capture_output=True)
        time.sleep(0.3)
        subprocess.run(["chattr", "-i", *files], capture_output=True)
        for process, kind in list(running.items()):
            if process.exitcode is not None:
                died[(kind, process.exitcode)] += 1
                del running[process]
                start(kind)
    stop.set()
    for process in running:
        process.join(15)
    checkpointers = Path(log).read_text().count("killed by SIGBUS") if Path(log).exists() else 0
    deaths = ", ".join(f"{n} {kind}s exited {code}" for (kind, code), n in sorted(died.items())) or "none"
    return (
        f"{cycles} times immutable for 0.3 s, {writers} writers: processes that died: {deaths}; "
        f"checkpoint processes of the master killed by SIGBUS: {checkpointers}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree to stress (this one)")
    args = parser.parse_args()
    probe = tempfile.NamedTemporaryFile(dir=tempfile.gettempdir())  # noqa: SIM115
    if subprocess.run(["chattr", "+i", probe.name], capture_output=True).returncode != 0:
        print("chattr +i is not possible here (needs root and an ext4-like filesystem)", file=sys.stderr)
        return 2
    subprocess.run(["chattr", "-i", probe.name], check=True)
    sys.path.insert(0, str(args.tree.resolve()))
    os.environ["PYTHONPATH"] = str(args.tree.resolve())  # the spawned processes'
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "files"
        folder.mkdir()
        try:
            print(stress(folder, args.cycles, args.writers), flush=True)
        finally:
            subprocess.run(["chattr", "-R", "-i", tmp], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
