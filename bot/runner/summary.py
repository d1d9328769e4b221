"""The Markdown summary of a results file, for ``$GITHUB_STEP_SUMMARY`` (medians, ranges, CV per side).

It describes what was measured; verdicts belong to `perfbot compare`. Text that came from outside
(metric names, error messages) is escaped, since a suite's output is untrusted.
"""

from __future__ import annotations

import re
import statistics

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~])")


def escape(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def values(results: dict, side: str, metric: str) -> list[float]:
    return [r["metrics"][metric] for r in results["rounds"]
            if r["side"] == side and r["ok"] and metric in r["metrics"]]


def spread(samples: list[float]) -> dict | None:
    """Median, range and coefficient of variation (stdev / mean) of one side's round values."""
    if not samples:
        return None
    mean = statistics.fmean(samples)
    cv = statistics.stdev(samples) / mean if len(samples) > 1 and mean else 0.0
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "cv": cv,
            "n": len(samples)}


def markdown(results: dict) -> str:
    base, head = results["base"], results["head"]
    same = base["sha"] == head["sha"]
    title = f"### perfbot bench: `{escape(results['suite'])}`" + (" (A/A: noise run)" if same else "")
    lines = [title, "",
             f"base `{base['sha'][:10]}` vs head `{head['sha'][:10]}`, status **{results['status']}**, "
             f"{rounds_line(results)}", ""]
    if results["metrics"]:
        lines += ["| metric | base median | head median | head/base | base range | head range "
                  "| base CV | head CV |", "|---|---:|---:|---:|---|---|---:|---:|"]
        lines += [metric_row(results, name, spec) for name, spec in results["metrics"].items()]
        lines.append("")
    lines += failure_lines(results)
    machine = machine_line(base.get("fingerprint", {}))
    if machine:
        lines += [f"Machine: {machine}", ""]
    lines += ["Verdicts (regression, improvement, unchanged) come from `perfbot compare` "
              "on the results file.", ""]
    return "\n".join(lines)


def rounds_line(results: dict) -> str:
    parts = []
    for side in ("base", "head"):
        rounds = [r for r in results["rounds"] if r["side"] == side]
        parts.append(f"{side} {sum(r['ok'] for r in rounds)}/{len(rounds)} rounds ok")
    return ", ".join(parts)


def metric_row(results: dict, name: str, spec: dict) -> str:
    base, head = spread(values(results, "base", name)), spread(values(results, "head", name))
    unit = f" {escape(spec['unit'])}" if spec["unit"] else ""
    ratio = f"{head['median'] / base['median']:.3f}" if base and head and base["median"] else "–"
    better = "↓" if spec["better"] == "lower" else "↑"
    return (f"| {escape(name)} ({better}) | {median(base, unit)} | {median(head, unit)} "
            f"| {ratio} | {span(base)} | {span(head)} | {percent(base)} | {percent(head)} |")


def median(stats: dict | None, unit: str) -> str:
    return f"{stats['median']:.4g}{unit}" if stats else "–"


def span(stats: dict | None) -> str:
    return f"{stats['min']:.4g} – {stats['max']:.4g}" if stats else "–"


def percent(stats: dict | None) -> str:
    return f"{100 * stats['cv']:.2f}%" if stats and stats["n"] > 1 else "–"


def failure_lines(results: dict) -> list[str]:
    failed = [r for r in results["rounds"] if not r["ok"]] + \
             [{**w, "index": "warm-up"} for w in results.get("warmups", []) if not w["ok"]]
    lines = [f"- {r['side']} round {r['index']}: {escape(r['error'] or 'failed')[:300]}" for r in failed[:10]]
    if len(failed) > 10:
        lines.append(f"- … and {len(failed) - 10} more")
    if results.get("error"):
        lines.insert(0, f"**Stopped:** {escape(results['error'])[:300]}")
    return [*lines, ""] if lines else []


def machine_line(fingerprint: dict) -> str:
    gpus = fingerprint.get("gpus") or []
    torch = fingerprint.get("torch") or {}
    parts = []
    if gpus:
        parts.append(f"{len(gpus)} × {escape(gpus[0].get('name', 'GPU'))}")
    if fingerprint.get("driver"):
        parts.append(f"driver {escape(fingerprint['driver'])}")
    for label, key in (("torch", "version"), ("CUDA", "cuda"), ("NCCL", "nccl")):
        if torch.get(key):
            parts.append(f"{label} {escape(torch[key])}")
    if fingerprint.get("cpu", {}).get("model"):
        parts.append(escape(fingerprint["cpu"]["model"]))
    return ", ".join(parts)
