#!/usr/bin/env python3
"""notebook_test.py REPO BUILD FIXTURE FASHION_MNIST WORK: kaggle/tandem.ipynb
run top to bottom in a real Jupyter kernel (nbclient + ipykernel), as on
"GPU T4 x2": a fake nvidia-smi lists two T4s, so the notebook picks its GPU
path and run.sh starts two ranks, NCCL settings, fp16 and its GPU monitor;
the apps themselves see no GPU through LibTorch and say so (cpu, fp32), which
the test checks rather than hides. TANDEM_SIZE=smoke cuts the jobs to a few
steps; the data is make_data.py's (from Fashion-MNIST), mounted as Kaggle
mounts datasets now (INPUT/datasets/OWNER/SLUG) for the notebook to find,
and summarize's built-in demo. BUILD's programs are used as they are: nothing is built.

Checks: the notebook is shipped valid and without outputs; every cell runs
without an error; the files the notebook promises exist (submission.csv,
eval.json, carotid's figures and report, vavae's grid and report,
TensorBoard events of every run, the zips); the PNGs shown inline are those
files; the ROUGE table and the download links are there; TensorBoard is
not started off Kaggle.

Exits 77 (skipped) without nbclient, nbformat or ipykernel, or without
Fashion-MNIST.
"""
import ast
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

# The programs the notebook runs: the apps its `for app in [...]` cell builds
# and shows, and tandem-plot, which it builds for the curves.
APPS_LOOP = re.compile(r"for app in (\[[^\]]*\])")
DEMO_TEST_ROWS = 100  # summarize's built-in demo: its test set

FAKE_NVIDIA_SMI = """#!/bin/bash
# Two T4s, as Kaggle's "GPU T4 x2" lists them; the monitor's lines every second.
case "$*" in
  *--query-gpu=timestamp*)
    while :; do
      for i in 0 1; do echo "$(date '+%Y/%m/%d %H:%M:%S.000'), $i, 97 %, 9000 MiB, 15360 MiB, 71"; done
      sleep 1
    done ;;
  *--query-gpu=index*) for i in 0 1; do echo "$i, Tesla T4, 15360 MiB, 7.5"; done ;;
  *--query-gpu=name*) for i in 0 1; do echo "Tesla T4"; done ;;
  *) echo "fake nvidia-smi" ;;
esac
"""

failures = []


def check(ok, what):
    print(("  ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def notebook_programs(notebook):
    """The apps of the notebook's `for app in [...]` loop, then tandem-plot."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    loops = [APPS_LOOP.search("".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    lists = [ast.literal_eval(m.group(1)) for m in loops if m]
    if len(lists) != 1:
        sys.exit(f"FAIL: {notebook} has {len(lists)} cells with a `for app in [...]` loop; expected one")
    return lists[0] + ["tandem-plot"]


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    repo, build, fixture, fashion, work = (Path(a).resolve() for a in sys.argv[1:])
    try:
        import ipykernel  # noqa: F401  (the kernel nbclient starts runs it)
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed in {sys.executable} (env/setup.sh --tests installs it)")
        sys.exit(77)
    notebook = repo / "kaggle" / "tandem.ipynb"
    missing = [a for a in notebook_programs(notebook) if not (build / "apps" / a).exists()]
    if missing:
        sys.exit(f"FAIL: {build}/apps lacks {', '.join(missing)}: build them first (this test never builds)")

    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    check(all(not c.outputs and c.execution_count is None for c in code), f"{notebook} is shipped without outputs")

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    status = subprocess.run([sys.executable, str(Path(__file__).with_name("make_data.py")), str(fixture),
                             str(fashion), str(work / "data")]).returncode
    if status != 0:
        sys.exit(status)
    (work / "fake").mkdir()
    (work / "fake" / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (work / "fake" / "nvidia-smi").chmod(0o755)
    # This Python's ipykernel, whatever kernels the machine has installed.
    spec = work / "jupyter" / "kernels" / "tandem-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tandem test", "language": "python"}))

    kaggle = work / "kaggle-working"
    for v in ["KAGGLE_KERNEL_RUN_TYPE", "CUDA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
              "OMP_NUM_THREADS", "TANDEM_PYTHON", "TANDEM_GIT", "VAVAE_VAE", "SUMMARIZE_DATA", "CAROTID_IMAGES",
              "CAROTID_LABELS", "VAVAE_DATA", "VAVAE_INCEPTION"]:
        os.environ.pop(v, None)
    # The datasets mounted as Kaggle mounts them now, OWNER/SLUG two levels
    # under datasets/, vavae's a level deeper still; no summarize data (the
    # built-in demo). The notebook finds them by what they hold.
    kaggle_input = work / "input"
    (kaggle_input / "datasets" / "tester" / "users").mkdir(parents=True)
    (kaggle_input / "datasets" / "tester" / "breast").symlink_to(work / "data" / "carotid")
    (kaggle_input / "datasets" / "tester" / "users" / "data_split").symlink_to(work / "data" / "vavae" / "data_split")
    # Unset, as on Kaggle, so that the notebook's own default shows (it builds
    # nothing here).
    for name in ("CCACHE_DIR", "CCACHE_MAXSIZE"):
        os.environ.pop(name, None)
    os.environ.update({
        "PATH": f"{work / 'fake'}:{os.environ['PATH']}",
        "JUPYTER_PATH": str(work / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"),
        "IPYTHONDIR": str(work / "ipython"),
        "TANDEM_REPO": str(repo),
        "TANDEM_BUILD": str(build),
        "TANDEM_WORK": str(kaggle),
        "TANDEM_SIZE": "smoke",
        "TANDEM_MONITOR_S": "1",
        "KAGGLE_INPUT": str(kaggle_input),
    })

    start = time.monotonic()
    client = NotebookClient(nb, timeout=300, kernel_name="tandem-test", resources={"metadata": {"path": str(work)}})
    try:
        client.execute()
        error = None
    except CellExecutionError as e:
        error = e
    executed = work / "tandem.executed.ipynb"
    nbformat.write(nb, executed)
    print(f"notebook executed in {time.monotonic() - start:.0f} s: {executed}")
    if error:
        print(error)
        sys.exit("FAIL: a cell raised an error (above)")

    check(all(c.execution_count is not None for c in code), "every code cell ran")
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    check(not errors, "no cell output is an error")

    text = "".join(o.get("text", "") for c in code for o in c.outputs if o.output_type == "stream")
    html = "".join(o.data.get("text/html", "") for c in code for o in c.outputs if "data" in o)
    shown = [base64.b64decode(o.data["image/png"]) for c in code for o in c.outputs
             if "data" in o and "image/png" in o.data]

    # Open MPI's flag for root: run.sh adds it only as root.
    root = "--allow-run-as-root " if os.geteuid() == 0 else ""
    check("precision: train.precision=auto -> fp16" in text and text.count(f"command: mpirun {root}-np 2 ") >= 6,
          "run.sh sees two T4s: fp16, mpirun -np 2 (three dry runs, three runs)")
    check(text.count("(dry run: nothing built or run)") == 3, "three dry runs")
    check(text.count("plan for 2 x t4 (Tesla T4") == 3, "the plan cell plans each app's full job on two T4s")
    check(text.count("kaggle/run.sh: done") == 4, "the GPU check, summarize, carotid and vavae finish")
    check("Self-test passed on every rank" in text and "check first: none (--no-check)" in text,
          "the GPU check cell runs envcheck --test on the two ranks, without a check before it")
    check(text.count("check passed: every collective right on 2 ranks") == 3,
          "each app's run checks its two ranks first")
    check(f"ccache in {kaggle}/.ccache" in text, "the compiler's cache is kept in the working folder")
    check("training on 2 rank(s), cpu" in text, "the apps train on two ranks, on the CPU they actually have")
    check("[gpu] " in text, "--monitor prints the GPU lines")
    check("configuring" not in text and "building " not in text, "nothing is built")
    tester = kaggle_input / "datasets" / "tester"
    check(f"carotid's data (images/ and label.xlsx or labels.xlsx or label.csv or labels.csv): {tester / 'breast'}"
          in text, "carotid's data found two levels under datasets/")
    check(f"vavae's data (train/ and val/, a folder per user in each): {tester / 'users' / 'data_split'}" in text,
          "vavae's data found three levels under datasets/")
    check(f"no summarize's data (train.csv and test.csv) under {kaggle_input}" in text and "\n  tester/\n" in text,
          "no summarize data: said, with what the input holds")

    runs = kaggle / "runs"
    summarize, carotid, vavae = runs / "summarize", runs / "carotid", runs / "vavae"
    rows = (summarize / "submission.csv").read_text().splitlines() if (summarize / "submission.csv").exists() else []
    check(rows[:1] == ["id,summary"] and len(rows) == DEMO_TEST_ROWS + 1,
          f"submission.csv: id,summary and {DEMO_TEST_ROWS} rows")
    check((kaggle / "submission.csv").exists() and (kaggle / "submission.csv").read_text().splitlines() == rows,
          "submission.csv copied where a competition reads it")
    report = json.loads((summarize / "eval.json").read_text()) if (summarize / "eval.json").exists() else {}
    check(0 <= report.get("rouge", {}).get("rouge1", {}).get("f1", -1) <= 1, "eval.json holds rouge1")
    check("<th>ROUGE (F1)</th>" in html and "<td>rouge1</td>" in html, "the ROUGE table is shown")

    carotid_report = carotid / "test_report.json"
    check(carotid_report.exists() and "auc" in json.loads(carotid_report.read_text()).get("persons", {}),
          "carotid's test_report.json holds the persons' AUC")
    check("<td>auc</td>" in html, "carotid's test metrics are shown")
    check((vavae / "evaluate" / "evaluate.json").exists(), "vavae's evaluate.json")
    check("<th>real val accuracy</th>" in html and "<th>KID</th>" in html, "vavae's per-user table is shown")
    check("no FID, KID, precision or recall: attach pytorch-fid's Inception-v3 weights" in text,
          "without Inception weights, the notebook says what to attach")

    sheets = sorted((carotid / "cam").glob("*.png"))[:2]
    check(len(sheets) > 0, "carotid's report.cam wrote contact sheets")
    for png in [summarize / "plots" / "loss.png", carotid / "plots" / "loss.png", carotid / "confusion_matrix.png",
                carotid / "roc_curve.png", carotid / "reliability.png", carotid / "reliability_person.png", *sheets,
                vavae / "vae" / "plots" / "loss.png", vavae / "dit" / "plots" / "loss.png",
                vavae / "samples" / "grid.png"]:
        check(png.exists() and png.read_bytes() in shown, f"{png.relative_to(kaggle)} is shown inline")

    for tb in [summarize / "tb", carotid / "tb", vavae / "vae" / "tb", vavae / "dit" / "tb", vavae / "samples" / "tb",
               vavae / "evaluate" / "tb"]:
        events = list(tb.glob("events.out.tfevents.*"))
        check(any(e.stat().st_size > 0 for e in events), f"{tb.relative_to(kaggle)} holds TensorBoard events")
        check(any(str(e.relative_to(runs)) in text for e in events), f"the TensorBoard cell lists {tb.relative_to(kaggle)}")
    # %tensorboard shows its server in an iframe: a display output.
    check(all(o.output_type == "stream" for o in code[-1].outputs), "TensorBoard is not started off Kaggle")

    for name, wanted in [("carotid-run.zip", "carotid/models/best_model.h5"), ("vavae-samples.zip", "samples/grid.png")]:
        path = kaggle / name
        names = zipfile.ZipFile(path).namelist() if path.exists() else []
        check(wanted in names and not any("/checkpoints/" in n for n in names), f"{name} holds {wanted}, no checkpoints")
    for link in ["submission.csv", "runs/summarize/models/best_model.h5", "carotid-run.zip",
                 "runs/vavae/samples/grid.png"]:
        check(f"href='{link}'" in html, f"a download link to {link}")
    check("doesn't exist" not in html, "every download link points at a file")

    if failures:
        sys.exit(f"FAILED: {len(failures)} check(s); the executed notebook is {executed}")
    # Passed: its runs are hundreds of MB that a CI disk need not keep.
    shutil.rmtree(work, ignore_errors=True)
    print(f"PASS ({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
