"""What the Python peers of the 2-rank benches (gpt2_ddp_peer.py,
carotid_ddp_peer.py, dit_ddp_peer.py) report, the way ddp_launch.py reads
it: milliseconds and items (tokens, images, samples) of each step after the
warm-up, seconds from BENCH_T0 (the driver's launch) to the end of the first
step, and peak RSS, as one JSON line from rank 0."""
import json
import os
import resource
import time


class StepTimes:
    def __init__(self, warmup):
        self.warmup = warmup
        self.t0 = float(os.environ.get("BENCH_T0", time.time()))
        self.ms, self.items, self.first_step_s = [], [], None

    def record(self, step, start, items):
        """Step `step` (0-based) began at time.perf_counter() `start` and is done."""
        step_ms = (time.perf_counter() - start) * 1000
        if self.first_step_s is None:
            self.first_step_s = time.time() - self.t0
        if step >= self.warmup:
            self.ms.append(step_ms)
            self.items.append(items)

    def report(self, loss):
        print(json.dumps({"ms": self.ms, "items": self.items, "first_step_s": self.first_step_s,
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                          "loss": loss}), flush=True)
