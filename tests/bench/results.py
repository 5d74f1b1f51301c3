#!/usr/bin/env python3
"""env/bench.sh's one table of tandem against the tools users run today.

Each bench given `--results FILE` appends one JSON line per figure there
(add()); `results.py FILE OUT.md COMMAND` then writes the Markdown table:
figure, tandem, peer, ratio (above 1: tandem better), goal (the ratio the
issue asks for, where it sets one), whether it is met, and a header naming
the machine, torch version, date and the command that made it.
"""
import datetime
import json
import os
import platform
import sys


def add(path, bench, figure, tandem, peer, ratio, goal=None):
    """Appends a row: tandem and peer are the figures as shown ("11601 tokens/s",
    "torchrun + DDP: 1633 tokens/s"); ratio is tandem's advantage (>1 better)."""
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps({"bench": bench, "figure": figure, "tandem": tandem, "peer": peer, "ratio": ratio,
                            "goal": goal}) + "\n")


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def render(rows_path, out_path, command):
    import torch  # only for its version: the one both sides ran

    rows = [json.loads(line) for line in open(rows_path) if line.strip()]
    lines = [
        "# tandem against the tools users run today",
        "",
        f"- command: `{command}`",
        f"- machine: {machine()}",
        f"- torch: {torch.__version__} (the same on both sides)",
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}",
        "",
        "| bench | figure | tandem | peer | ratio | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        goal = f"≥ {r['goal']:g}x" if r["goal"] else ""
        met = ("yes" if r["ratio"] >= r["goal"] else "no") if r["goal"] else ""
        lines.append(f"| {r['bench']} | {r['figure']} | {r['tandem']} | {r['peer']} | {r['ratio']:.2f}x | {goal} | "
                     f"{met} |")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: results.py ROWS.jsonl OUT.md COMMAND")
    render(*sys.argv[1:])
