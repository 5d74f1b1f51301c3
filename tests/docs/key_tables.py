#!/usr/bin/env python3
"""The docs' key tables are made from the programs' own --help, so that a
key's doc is written once, in its C++ declaration, and no table can drift
from it.

    key_tables.py [--write] ROOT NAME=PROGRAM [NAME=PROGRAM ...]

A key table is what lies between two markers in a markdown file:

    <!-- keys: summarize data. tokenizer.dir -->
    ...
    <!-- /keys -->

The first word names the program the rows come from (NAME, as given on the
command line); the others are prefixes (`data.` takes every key that starts
with it) or whole keys. The table has a row per key of that program's --help
that one of them takes, in --help order: the key and the flags that set it,
its default, and its doc (with its choices).

A table of keys that several programs share names them all, the one whose
rows it shows first: `<!-- keys: summarize,carotid,vavae train. obs. -->`.
Each other program that has a key of the table must give it the same doc;
where their defaults or flags differ, the row shows each program's.

With --write, every table is made again in place. Without, the check (ctest
docs_key_tables) fails, naming file and line, when a table is not what --write
would make, when a program's key is in no table or in two, when a prefix
takes no key, or when the programs sharing a key give it different docs.
The tables are read from README.md and the markdown files it links to, so the
README keeps saying where each key is; a table in a file the README does not
link is a problem too.

After changing a key's doc, default or flag in C++, build, then from the
build folder:

    python3 ../tests/docs/key_tables.py --write .. summarize=apps/summarize \\
        carotid=apps/carotid vavae=apps/vavae envcheck=apps/envcheck
"""
import difflib
import os
import re
import subprocess
import sys

from problems import markdown_files, report

LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
START = re.compile(r"^<!-- keys:(.*?)-->\s*$")
END = "<!-- /keys -->"
HEADER = "| key | default | what it does |\n|---|---|---|\n"
KEY_SHAPE = r"[a-z_0-9]+(?:\.[a-z_0-9]+)+"
# In a doc: a quoted word, a flag, or something shaped like a key.
CODE = re.compile(r'"[^"\s]*"|(?<![\w.-])--[a-z][\w-]*|(?<![\w./-])' + KEY_SHAPE + r"(?![\w/])")


def toml_literal(text):
    """The length of the TOML literal (string, array or bare word) TEXT starts with."""
    if text.startswith('"'):
        i = 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    if text.startswith("["):
        depth, i, quoted = 0, 0, False
        while i < len(text):
            c = text[i]
            if quoted:
                i += 1 if c == "\\" else 0
                quoted = c != '"'
            elif c == '"':
                quoted = True
            elif c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return len(text)
    return len(text.split()[0]) if text.split() else 0


def help_keys(program):
    """[(key, default, doc)] from the "Keys, set in ..." part of --help, and
    {key: [flags]} from its options ("--lr FLOAT  = train.lr: ...")."""
    text = subprocess.run([program, "--help"], capture_output=True, text=True, check=True).stdout
    options, keys_part = text.split("Keys, set in the --config file")
    flags = {}
    for line in options.splitlines():
        match = re.match(r"  (?:-\w,)?(--[\w-]+)(?: \S+)?\s+= (" + KEY_SHAPE + "):", line)
        if match:
            flags.setdefault(match.group(2), []).append(match.group(1))
    keys = []
    for line in keys_part.splitlines()[1:]:
        match = re.match(r"  (\S+)\s+(\S+)\s+", line)
        if not match:
            break
        rest = line[match.end():]
        end = toml_literal(rest)
        keys.append((match.group(1), rest[:end], rest[end:].strip()))
    return keys, flags


class Program:
    def __init__(self, name, path):
        self.name = name
        self.keys, self.flags = help_keys(path)
        self.defaults = {key: default for key, default, _ in self.keys}
        self.docs = {key: doc for key, _, doc in self.keys}


def code(text):
    tick = "``" if "`" in text else "`"
    pad = " " if tick == "``" else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def plain(text):
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text.replace("*", "\\*"))


def markdown_doc(doc, known):
    """--help's doc in markdown: keys, flags and quoted words as code, the
    choices note "(a|b|c)" as "(one of `a`, `b`, `c`)"."""
    choices = re.search(r" ?\((an integer or )?([^()\s]+)\)$", doc)
    note = ""
    if choices and (choices.group(1) or "|" in choices.group(2)):
        words = ", ".join(code(w) for w in choices.group(2).split("|"))
        note = f"({choices.group(1) or 'one of '}{words})"
        doc = doc[:choices.start()]

    # Keys, flags and quoted words as code; in the rest, what markdown would
    # take for emphasis or HTML escaped.
    out, last = [], 0
    for match in CODE.finditer(doc):
        text = match.group(0)
        if text[0] in '"-' or text in known:
            out += [plain(doc[last:match.start()]), code(text)]
            last = match.end()
    doc = "".join(out) + plain(doc[last:])
    return " ".join(part for part in (doc, note) if part)


def cell(text):
    return text.replace("|", "\\|")


def per_program(values, names):
    """One value, when every program of the table has it; else each value
    after the programs that have it ("summarize: `500`; carotid: `0`")."""
    groups = {}
    for name in values:
        groups.setdefault(values[name], []).append(name)
    if len(groups) == 1 and len(values) == len(names):
        return next(iter(groups))
    return "; ".join(f"{', '.join(names)}: {value}" for value, names in groups.items() if value)


def make_table(names, patterns, programs, known):
    """The table's text, the keys it takes, and the problems it has."""
    problems, rows, taken = [], [], []
    first = programs[names[0]]
    for pattern in patterns:
        if not any(k == pattern or (pattern.endswith(".") and k.startswith(pattern)) for k, _, _ in first.keys):
            problems.append(f"`{pattern}` takes no key of {names[0]}")
    for key, _, doc in first.keys:
        if not any(key == p or (p.endswith(".") and key.startswith(p)) for p in patterns):
            continue
        taken.append(key)
        holders = [n for n in names if key in programs[n].docs]
        for name in holders:
            if programs[name].docs[key] != doc:
                problems.append(f"`{key}`: {name}'s doc differs from {names[0]}'s: "
                                f"{programs[name].docs[key]!r} against {doc!r}")
        default = per_program({n: code(programs[n].defaults[key]) for n in holders}, names)
        flags = per_program({n: ", ".join(code(f) for f in programs[n].flags.get(key, [])) for n in holders},
                            names)
        name_cell = code(key) + (f" ({flags})" if flags else "")
        rows.append(f"| {cell(name_cell)} | {cell(default)} | {cell(markdown_doc(doc, known))} |\n")
    for name in names[1:]:
        if not any(key in programs[name].docs for key in taken):
            problems.append(f"{name} has none of this table's keys")
    return "\n" + HEADER + "".join(rows), taken, problems


def differences(path, first_line, have, want):
    """Where a table's lines (HAVE, from line FIRST_LINE of PATH) are not WANT."""
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, have, want, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lines = [f"      in the file: {line}" for line in have[i1:i2]]
        lines += [f"      from --help: {line}" for line in want[j1:j2]]
        found.append(f"{path}:{first_line + i1}: not what --help gives (key_tables.py --write makes it so):\n"
                     + "\n".join(lines))
    return found


def linked_files(readme):
    """README.md and the local markdown files it links to, in order of first link."""
    files = [os.path.normpath(readme)]
    base = os.path.dirname(readme)
    for target in LINK.findall(open(readme, encoding="utf-8").read()):
        path = os.path.normpath(os.path.join(base, target))
        if "://" not in target and path not in files and os.path.exists(path):
            files.append(path)
    return files


def tables(path):
    """[(start line index, end line index, marker words)] of a file's key tables, and problems."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, problems, start = [], [], None
    for i, line in enumerate(lines):
        match = START.match(line)
        if match:
            if start is not None:
                problems.append(f"{path}:{i + 1}: a key table starts inside the one of line {start + 1}")
            start, words = i, match.group(1).split()
        elif line.strip() == END:
            if start is None:
                problems.append(f"{path}:{i + 1}: {END} without a table before it")
            else:
                found.append((start, i, words))
                start = None
    if start is not None:
        problems.append(f"{path}:{start + 1}: key table without {END}")
    return lines, found, problems


def main(argv):
    write = "--write" in argv
    argv = [a for a in argv if a != "--write"]
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.exit(__doc__)
    root = argv[0]
    programs = {}
    for pair in argv[1:]:
        name, path = pair.split("=", 1)
        try:
            programs[name] = Program(name, path)
        except (OSError, subprocess.CalledProcessError, ValueError) as error:
            return report([f"{name}: {path} --help: {error}"], "the programs' --help")
    known = {key for p in programs.values() for key in p.docs}
    readme = os.path.join(root, "README.md")
    files = linked_files(readme)
    problems, where, count = [], {name: {} for name in programs}, 0
    for path in markdown_files(root):
        if os.path.normpath(path) not in files and any(START.match(l) for l in open(path, encoding="utf-8")):
            problems.append(f"{path}: has key tables, but {readme} does not link it")
    for path in files:
        lines, found, file_problems = tables(path)
        problems += file_problems
        made, last = [], 0
        for start, end, words in found:
            count += 1
            label = f"{path}:{start + 1}"
            names = words[0].split(",") if words else []
            unknown = [n for n in names if n not in programs]
            if not names or unknown or len(words) < 2:
                problems.append(f"{label}: expected <!-- keys: PROGRAM[,PROGRAM...] PREFIX... --> "
                                f"with programs among {', '.join(programs)}")
                made += lines[last:end]
                last = end
                continue
            text, taken, table_problems = make_table(names, words[1:], programs, known)
            problems += [f"{label}: {p}" for p in table_problems]
            for key in taken:
                for name in names:
                    if key in programs[name].docs:
                        if key in where[name]:
                            problems.append(f"{label}: {name}'s `{key}` is also in the table at {where[name][key]}")
                        where[name].setdefault(key, label)
            want, have = text.split("\n"), lines[start + 1:end]
            if not write:
                problems += differences(path, start + 2, have, want)
            made += lines[last:start + 1] + want
            last = end
        made += lines[last:]
        if write and made != lines:
            with open(path, "w", encoding="utf-8") as out:
                out.write("\n".join(made))
            print(f"{path}: written")
    for name, program in programs.items():
        for key, _, _ in program.keys:
            if key not in where[name]:
                problems.append(f"{readme}: {name}'s key `{key}` is in no key table of it or the files it links")
    keys = sum(len(p.keys) for p in programs.values())
    return report(problems, f"{keys} keys of {len(programs)} programs in {count} tables of {len(files)} files")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
