"""What the Python baselines of bench_gpt2_train and bench_resnet_train share:
a missing torch or any error reported as the one JSON line the C++ bench reads,
and the timing of training steps as train_timing.cpp does it on our side.

Import it before torch: without torch (tandem's venv has it) the import itself
prints the error line and exits 1.
"""
import json
import sys
import time

try:
    import torch
except ImportError as error:  # not tandem's venv, or a Python without torch
    print(json.dumps({"error": f"cannot import torch: {error}"}))
    sys.exit(1)


def run(main):
    """Calls main(); an exception becomes the JSON error line and exit status 1."""
    try:
        main()
    except Exception as error:  # noqa: BLE001 - reported to the C++ bench
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)


def time_training(model, optimizer, loss, device, warmup, steps, items_per_step, rate_key):
    """Trains `warmup` then `steps` steps of loss() (forward and loss),
    backward, the optimizer's step and dropping the gradients, and prints
    the figures as one JSON line: items_per_step items a step per second
    under rate_key, the first and last loss, and on a CPU the milliseconds of
    each phase of a timed step."""
    # Phases timed on a CPU only, as the C++ bench does (on a GPU that would
    # take a synchronisation each).
    phases = device.type == "cpu"
    phase_s = [0.0, 0.0, 0.0]

    def step():
        t0 = time.perf_counter()
        value = loss()
        t1 = time.perf_counter()
        value.backward()
        t2 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        result = value.item()  # after the step: waits for the device to finish it
        for i, seconds in enumerate((t1 - t0, t2 - t1, time.perf_counter() - t2)):
            phase_s[i] += seconds
        return result

    # Warm-up steps are untimed: the first allocates the optimizer's state.
    losses = [step() for _ in range(warmup)]
    phase_s[:] = [0.0, 0.0, 0.0]
    start = time.perf_counter()
    losses += [step() for _ in range(steps)]
    seconds = time.perf_counter() - start
    split = {}
    if phases:
        split = {key: s * 1e3 / steps for key, s in zip(("forward_ms", "backward_ms", "optimizer_ms"), phase_s)}
    print(json.dumps({
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds": seconds,
        rate_key: items_per_step * steps / seconds,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        **split,
    }))
