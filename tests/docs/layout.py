#!/usr/bin/env python3
"""docs/ARCHITECTURE.md's Layout against the tree, so that the one map of the
repository stays true as folders come and go.

    layout.py ROOT [LAYOUT.md]

LAYOUT.md (default ROOT/docs/ARCHITECTURE.md) has a "## Layout" section whose
first code block lists the tree: an entry starts its line, indented two spaces
per level under its folder; a folder ends in "/"; the description follows, and
lines indented to the description column continue it. Fails, naming the path,
when
  - an entry names a folder or file that does not exist;
  - a folder at the top, under apps/, under tests/ or under
    libcore/include/tandem/ (a concern), or anything under env/ (the scripts a
    user runs), exists but is not named;
  - a folder of tests/unit/ is not one of libcore/include/tandem/'s: the unit
    tests mirror libcore's concerns (MIRRORS).
What exists is what git shows: tracked files and untracked ones it does not
ignore, so build folders, data and run folders (.gitignore) and empty or
leftover folders do not count; hidden entries are never asked for. Outside a
git checkout that cannot be told, and the test is skipped (77).
"""
import os
import re
import subprocess
import sys

from problems import report

# Where every child must be named: (folder, whether files count too).
COMPLETE = [("", False), ("apps", False), ("tests", False), ("libcore/include/tandem", False), ("env", True)]
# (tests folder, the folder whose sub-folders it mirrors).
MIRRORS = [("tests/unit", "libcore/include/tandem")]


def layout_entries(path):
    """{path relative to ROOT: (line number, is a folder)} from the Layout block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    try:
        start = lines.index("## Layout")
        fence = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    except (ValueError, StopIteration):
        sys.exit(f"{path}: expected a '## Layout' section with a ``` code block")
    block = lines[fence + 1:end]
    # The first line's description column: an entry is indented less than that.
    first = re.match(r"(\S+\s+)\S", block[0])
    description_column = len(first.group(1)) if first else 0
    entries, parents = {}, []  # parents: (depth, path) of the folders above
    for offset, line in enumerate(block):
        number = fence + 2 + offset
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= description_column:
            continue
        if indent % 2:
            sys.exit(f"{path}:{number}: an entry is indented by a multiple of two spaces, got {indent}")
        depth, name = indent // 2, line.split()[0]
        parents = [(d, p) for d, p in parents if d < depth]
        if len(parents) != depth:
            sys.exit(f"{path}:{number}: '{name}' is indented deeper than the folder above it")
        full = (parents[-1][1] + "/" if parents else "") + name.rstrip("/")
        entries[full] = (number, name.endswith("/"))
        if name.endswith("/"):
            parents.append((depth, full))
    return entries


def visible(root):
    """(files, folders) git shows under ROOT, relative to it; None outside a git checkout."""
    run = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None
    files = {f for f in run.stdout.split("\0") if f and os.path.lexists(os.path.join(root, f))}
    folders = set()
    for f in files:
        folder = os.path.dirname(f)
        while folder and folder not in folders:
            folders.add(folder)
            folder = os.path.dirname(folder)
    return files, folders


def main():
    root = sys.argv[1]
    layout = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "docs", "ARCHITECTURE.md")
    shown = visible(root)
    if shown is None:
        print(f"{root} is not a git checkout: what git ignores cannot be told apart; skipped")
        return 77
    files, folders = shown
    entries = layout_entries(layout)
    problems = []
    for path, (number, is_folder) in entries.items():
        if path not in (folders if is_folder else files):
            kind = "folder" if is_folder else "file"
            problems.append(f"{layout}:{number}: the Layout names the {kind} {path}{'/' if is_folder else ''}, "
                            f"which does not exist (or git ignores it)")
    for parent, with_files in COMPLETE:
        prefix = parent + "/" if parent else ""
        children = {c for c in folders | (files if with_files else set())
                    if c.startswith(prefix) and "/" not in c[len(prefix):]}
        for child in sorted(children):
            if os.path.basename(child).startswith(".") or child in entries:
                continue
            what = f"{child}/" if child in folders else child
            where = f"under {parent}/" if parent else "at the top"
            problems.append(f"{layout}: {what} exists but the Layout does not name it "
                            f"(expected an entry for it {where})")
    for tests, code in MIRRORS:
        for folder in sorted(f for f in folders if os.path.dirname(f) == tests):
            mirrored = os.path.join(code, os.path.basename(folder))
            if mirrored not in folders:
                problems.append(f"{folder}/ mirrors no folder of {code}/ (expected tests for {mirrored}/)")
    return report(problems, f"{layout}: {len(entries)} Layout entries against {root}")


if __name__ == "__main__":
    sys.exit(main())
