#!/usr/bin/env python3
"""Every relative link in the repository's markdown leads somewhere, so that
moving a page or renaming a heading cannot leave a reader at a dead end.

    links.py ROOT [FILE.md ...]

Checks the given files, by default every markdown file git tracks under ROOT
(README.md, docs/*.md, the folders' READMEs; outside a git checkout README.md
and docs/*.md). A link's file (or folder) must exist; a #anchor into a
markdown file must be one of its headings, as GitHub makes anchors of them.
Links to web addresses are not followed. Fails naming the file, line and link.
"""
import os
import re
import sys

from problems import markdown_files, report

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path):
    """(line number, line) outside code blocks."""
    fenced = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(path, cache={}):
    """The anchors GitHub gives the headings of a markdown file."""
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not heading:
                continue
            # A link in a heading counts by its text; inline code by its letters.
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        cache[path] = found
    return cache[path]


def main():
    root = sys.argv[1]
    files = sys.argv[2:] or markdown_files(root)
    problems, checked = [], 0
    for path in files:
        for number, line in prose_lines(path):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue
                checked += 1
                name, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
                if not os.path.exists(dest):
                    problems.append(f"{path}:{number}: link ({target}) expects {dest}, which does not exist")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"{path}:{number}: link ({target}) expects a heading of {dest} "
                                    f"whose anchor is #{anchor}; it has none")
    return report(problems, f"{checked} relative links in {len(files)} markdown files")


if __name__ == "__main__":
    sys.exit(main())
