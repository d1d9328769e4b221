"""The fault scenarios of tests/faults at full size: thousands of deliveries at a steady rate
while a consumer, the whole server, PostgreSQL or Redis is killed or restarted, GitHub fails in
every way it does, the disk fills up or the files become immutable. Prints, per scenario: sent,
acknowledged, refused (503), unanswered, processed, lost, doubled and the time to recover, and
the load average it ran under. PASS when nothing acknowledged was lost or done twice.

    .venv/bin/python benchmarks/bench_faults.py                      # every scenario, full size
    .venv/bin/python benchmarks/bench_faults.py --only killed --count 2000 --rate 50

Root is needed for the disk-full scenario (a tmpfs) and the immutable-files one (chattr);
PostgreSQL's server binaries and redis-server for the restarts (each scenario starts its own).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import fault_scenarios as scenarios  # noqa: E402
from tests.support import github_data  # noqa: E402
from tests.support.github_emulator import GitHubEmulator  # noqa: E402

STREAMS = ("killed", "restarted", "disk", "immutable")
ALL = ("mid-job", *STREAMS, "github", "credentials")


def app_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode(),
            key.public_key().public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo).decode())


def run(name: str, count: int, rate: float, workdir: Path) -> tuple[str, bool]:
    if name == "mid-job":
        emulator = GitHubEmulator().start()
        try:
            found = scenarios.consumer_killed_mid_job(emulator, app_key(), workdir)
        finally:
            emulator.stop()
        return found.line(), (found.comments, found.checks, found.dispatches) == (1, 1, 1) and max(
            found.review_s, found.dispatch_s) < 60
    if name == "github":
        emulator = GitHubEmulator().start()
        try:
            figures = scenarios.github_faults(emulator, app_key(), workdir, reviews=max(6, count // 50))
        finally:
            emulator.stop()
    elif name == "credentials":
        _, figures = scenarios.without_credentials(workdir, count=10)
        return figures.line(), "failed at once (1 attempt) 10" in figures.line()
    else:
        scenario = {"killed": scenarios.killed_mid_stream, "restarted": scenarios.services_restarted,
                    "disk": scenarios.disk_full, "immutable": scenarios.files_immutable}[name]
        figures = scenario(workdir, count=count, rate=rate)
        if figures is None:
            return f"{name}: skipped (needs root)", True
    return figures.line(), figures.lost == figures.doubled == 0 and figures.processed == figures.acknowledged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=ALL, action="append", help="run only these scenarios")
    parser.add_argument("--count", type=int, default=2000, help="deliveries per stream (default 2000)")
    parser.add_argument("--rate", type=float, default=50.0, help="deliveries per second (default 50)")
    args = parser.parse_args()
    github_data.ensure()
    ok = True
    for name in args.only or ALL:
        before = os.getloadavg()
        with tempfile.TemporaryDirectory() as tmp:
            line, passed = run(name, args.count, args.rate, Path(tmp))
        after = os.getloadavg()
        verdict = "ok" if passed else "FAILED"
        print(f"{line}\n  load average {before[0]:.2f} before, {after[0]:.2f} after; {verdict}", flush=True)
        ok = ok and passed
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
