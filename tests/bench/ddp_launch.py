"""What the 2-rank benches (bench_gpt2_ddp.py, bench_carotid_ddp.py, bench_dit_ddp.py) share:
running one side into a log, torchrun's command line, and reading a tandem
run folder's step figures."""
import datetime
import json
import os
import re
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env, log):
    """Runs cmd with its output in log; a failure ends the bench with the log's tail."""
    with open(log, "w") as out:
        done = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}); last lines of {log}:\n{tail}")


def torchrun(python, world, script, args):
    """torchrun beside the venv's python, on a free port."""
    return [os.path.join(os.path.dirname(python), "torchrun"), "--nproc_per_node", str(world),
            "--master_port", str(free_port()), script] + args


def result_line(log):
    """The last JSON line a Python peer's rank 0 printed."""
    for line in reversed(open(log).read().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"{log}: no result line")


def summary(side, unit, ms, items, first_step_s, peak_rss_mb):
    """One side's figures: `unit`_per_s (items: tokens, images, samples of each step) and ms/step."""
    return {"side": side, f"{unit}_per_s": sum(items) * 1000.0 / sum(ms), "ms_per_step": sum(ms) / len(ms),
            "first_step_s": first_step_s, "peak_rss_mb": peak_rss_mb}


def peer_summary(side, unit, log):
    """summary() of a Python peer, from the line peer_steps.StepTimes.report() printed."""
    r = result_line(log)
    return summary(side, unit, r["ms"], r["items"], r["first_step_s"], r["peak_rss_mb"])


def tandem_summary(side, unit, out_dir, warmup, t0, rate_key="samples_per_s"):
    """summary() of a tandem run: its metrics.jsonl rows after `warmup` (items
    from rate_key), and seconds from t0 (the launch, time.time()) to the end of
    its first step, from rank 0's log; with several ranks also sync_wait_ms,
    the mean wait for the gradients' all-reduce after backward."""
    rows = [json.loads(line) for line in open(os.path.join(out_dir, "metrics.jsonl"))]
    rows = [r for r in rows if "loss" in r and "ms" in r][warmup:]
    first = None
    for line in open(os.path.join(out_dir, "logs", "rank-0.log")):
        if re.search(r" step 1 ", line):
            stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f")
            first = stamp.timestamp() - t0
            break
    result = summary(side, unit, [r["ms"] for r in rows], [r[rate_key] * r["ms"] / 1000 for r in rows], first,
                     max(r["peak_mem_mb"] for r in rows))
    if all("tokens_computed" in r for r in rows):
        real = sum(r["tokens_computed"] * (1 - r["pad_fraction"]) for r in rows)
        result["pad_fraction"] = 1 - real / sum(r["tokens_computed"] for r in rows)
    waits = [r["sync_wait_ms"] for r in rows if "sync_wait_ms" in r]
    if waits:  # 2 ranks or more: the all-reduce time backward did not hide
        result["sync_wait_ms"] = sum(waits) / len(waits)
    return result


def keep_best(best, r, rate_key):
    """Keeps in best[side] the round with the highest rate_key. The first-step
    time is the best round's of its own: tandem's first round also tokenizes
    or decodes the data into its cache."""
    side = r["side"]
    first = min(r["first_step_s"], best[side]["first_step_s"]) if side in best else r["first_step_s"]
    if side not in best or r[rate_key] > best[side][rate_key]:
        best[side] = r
    best[side]["first_step_s"] = first
