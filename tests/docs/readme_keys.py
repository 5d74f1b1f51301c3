#!/usr/bin/env python3
"""The key tables the README points to against the programs' own --help, so
that neither can drift from the other: every key a program declares is
documented, every documented key exists, and a default a table states is the
program's.

    readme_keys.py README.md NAME=PROGRAM [NAME=PROGRAM ...]

The tables are read from README.md and from every markdown file it links to
(docs/summarize.md, docs/training.md ...): a key documented only in a file the
README does not link counts as undocumented, so the README keeps saying where
each key is. A table belongs to the program its file is named after
(docs/NAME.md); tables in other files (the keys every app shares) are checked
against all programs.
"""
import math
import os
import re
import subprocess
import sys

LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")

KEY = re.compile(r"`([a-z_0-9]+(?:\.[a-z_0-9]+)+)`")


def help_keys(program):
    """{key: default text} from the "Keys, set in ..." part of --help."""
    text = subprocess.run([program, "--help"], capture_output=True, text=True, check=True).stdout
    lines = text.split("Keys, set in the --config file")[1].splitlines()[1:]
    keys = {}
    for line in lines:
        match = re.match(r"  (\S+)\s+(\S+)\s+(.*)$", line)
        if match:
            keys[match.group(1)] = re.split(r"\s{2,}", match.group(3))[0]
    return keys


def linked_files(readme):
    """README.md and the local markdown files it links to, in order of first link."""
    files = [readme]
    base = os.path.dirname(readme)
    for target in LINK.findall(open(readme, encoding="utf-8").read()):
        path = os.path.normpath(os.path.join(base, target))
        if "://" not in target and path not in files:
            files.append(path)
    return files


def key_tables(path):
    """[(line number, keys, defaults or None)] for each key-table row of the file."""
    rows, in_table = [], False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("| key |"):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
        if not in_table or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        keys = KEY.findall(cells[0])
        values = re.findall(r"`([^`]*)`", cells[1])
        # Only a cell that is nothing but a list of values states one per key.
        plain = re.fullmatch(r"(`[^`]*`\s*,?\s*)*", cells[1]) is not None
        rows.append((number, keys, values if plain and len(values) == len(keys) else None))
    return rows


def same(readme, program):
    if readme == program or readme.strip('"') == program.strip('"'):
        return True
    try:
        a, b = float(readme), float(program)
    except ValueError:
        return False
    return a == b or (math.isnan(a) and math.isnan(b))


def main():
    readme, pairs = sys.argv[1], sys.argv[2:]
    programs = {}
    for pair in pairs:
        name, program = pair.split("=", 1)
        programs[name] = help_keys(program)
    problems, documented = [], {name: set() for name in programs}
    files = linked_files(readme)
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        owners = [stem] if stem in programs else list(programs)
        for number, keys, values in key_tables(path):
            for i, key in enumerate(keys):
                having = [name for name in owners if key in programs[name]]
                if not having:
                    problems.append(f"{path}:{number}: `{key}` is not a key of {' or '.join(owners)}")
                    continue
                for name in having:
                    documented[name].add(key)
                if values is not None and not any(same(values[i], programs[n][key]) for n in having):
                    theirs = ", ".join(f"{n}: {programs[n][key]}" for n in having)
                    problems.append(f"{path}:{number}: `{key}` default `{values[i]}`, but --help says {theirs}")
    for name, keys in programs.items():
        for key in keys:
            if key not in documented[name]:
                problems.append(f"{readme}: {name}'s key `{key}` is in no key table of it or the files it links")
    for problem in problems:
        print(problem)
    print(f"{sum(len(k) for k in programs.values())} keys of {len(programs)} programs checked "
          f"in {', '.join(files)}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
