"""Plot a soak's samples (`bench_soak.py --out`): memory of each process, acknowledgement latency
and queue lag over time, in one PNG.

matplotlib is not one of perfbot's dependencies; run this with an interpreter that has it, e.g. a
throwaway one:

    python3 -m venv /tmp/plotvenv && /tmp/plotvenv/bin/pip install matplotlib
    /tmp/plotvenv/bin/python benchmarks/plot_soak.py soak.json docs/images/soak.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: Path, target: Path) -> None:
    run = json.loads(source.read_text())
    samples, summary = run["samples"], run["summary"]
    minutes = [s["t_s"] / 60 for s in samples]
    figure, (memory, latency, lag) = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for role in samples[0]["rss_mb"]:
        memory.plot(minutes, [s["rss_mb"].get(role, 0) for s in samples], label=role)
    memory.set_ylabel("resident memory (MB)")
    memory.legend(fontsize="small", ncol=2)
    memory.set_title(
        f"perfbot soak: {summary['layout']} layout, {summary['rate']:g} deliveries/s for "
        f"{summary['minutes']:g} min; exactly once: {summary['exactly_once']}"
    )
    latency.plot(minutes, [s["ack_p99_ms"] for s in samples], label="p99")
    latency.plot(minutes, [s["ack_p50_ms"] for s in samples], label="p50")
    latency.set_ylabel("acknowledgement (ms)")
    latency.set_yscale("log")
    latency.legend(fontsize="small")
    lag.plot(minutes, [s["pending"] for s in samples], label="deliveries waiting", color="tab:purple")
    lag.set_ylabel("deliveries waiting")
    twin = lag.twinx()
    lags = [s["lag_p99_s"] or 0 for s in samples]
    twin.plot(minutes, lags, label="processing lag p99 (s)", color="tab:red")
    twin.set_ylabel("processing lag p99 (s)")
    lag.set_xlabel("minutes")
    lines = lag.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    lag.legend(lines, [line.get_label() for line in lines], fontsize="small", loc="upper left")
    figure.tight_layout()
    figure.savefig(target, dpi=90)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
