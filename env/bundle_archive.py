#!/usr/bin/env python3
"""Unpacks an offline bundle's archive (env/bundle.sh --archive) into a new
folder, after checking every entry: the archive is untrusted input (a Kaggle
dataset anyone may have made), so nothing is written until all of it passes.

    bundle_archive.py ARCHIVE.tar.gz DEST

An archive holds one bundle, at its top or under one top folder (what
env/bundle.sh writes: NAME/MANIFEST, NAME/root/...); DEST receives that
folder's contents. Refused, exit status 2 and the entry named, before DEST
exists:
  - a name that is absolute or has a '..' part;
  - a symbolic or hard link whose target is absolute or lies outside the
    bundle;
  - anything but files, folders and links (devices, FIFOs);
  - no MANIFEST, or entries outside the bundle's top folder;
  - a file that is not a gzip-compressed tar archive.
Links and modes are restored from the MANIFEST afterwards
(env/bundle_env.sh), which also checks every file's sha256.
"""
import os
import posixpath
import shutil
import sys
import tarfile


def refuse(archive, what):
    print(f"{archive}: {what}: nothing was unpacked", file=sys.stderr)
    sys.exit(2)


def parts(name):
    return [p for p in name.split("/") if p not in ("", ".")]


def top_folder(archive, members):
    """The folder holding MANIFEST: '' (the top) or one folder's name."""
    names = {"/".join(parts(m.name)) for m in members}
    if "MANIFEST" in names:
        return ""
    tops = {parts(m.name)[0] for m in members if parts(m.name)}
    if len(tops) == 1:
        top = tops.pop()
        if f"{top}/MANIFEST" in names:
            return top
    refuse(archive, "no MANIFEST at its top or under one top folder: not an archive env/bundle.sh --archive made")


def check(archive, members, top):
    """Refuses the first bad entry; with top, also what lies outside it."""
    for m in members:
        name = m.name
        p = parts(name)
        if name.startswith("/"):
            refuse(archive, f"entry '{name}' has an absolute path")
        if ".." in p:
            refuse(archive, f"entry '{name}' has a '..' in its path")
        if top and (not p or p[0] != top):
            refuse(archive, f"entry '{name}' lies outside the bundle's folder '{top}'")
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            refuse(archive, f"entry '{name}' is not a file, folder or link")
        if m.issym() or m.islnk():
            target = m.linkname
            if target.startswith("/"):
                refuse(archive, f"entry '{name}' links to the absolute path '{target}'")
            # A symbolic link is read from its folder, a hard link from the archive's top.
            base = posixpath.dirname("/".join(p)) if m.issym() else ""
            resolved = posixpath.normpath(posixpath.join(base, target))
            inside = parts(resolved)
            if resolved.startswith("..") or (top and (not inside or inside[0] != top)):
                refuse(archive, f"entry '{name}' links to '{target}', outside the bundle")


def strip_top(m, top):
    """The member, renamed relative to the bundle's folder."""
    p = parts(m.name)[1:] if top else parts(m.name)
    m.name = "/".join(p)
    if m.islnk():
        q = parts(m.linkname)
        m.linkname = "/".join(q[1:] if top else q)
    return m


def main():
    if len(sys.argv) != 3:
        print("usage: bundle_archive.py ARCHIVE.tar.gz DEST", file=sys.stderr)
        sys.exit(2)
    archive, dest = sys.argv[1:]
    if os.path.exists(dest):
        refuse(archive, f"{dest} exists")
    try:
        tar = tarfile.open(archive, "r:gz")
        members = tar.getmembers()
    except (tarfile.TarError, OSError, EOFError) as e:
        refuse(archive, f"not a readable .tar.gz archive ({e})")
    check(archive, members, "")
    top = top_folder(archive, members)
    check(archive, members, top)
    os.makedirs(dest)
    kept = [strip_top(m, top) for m in members if parts(m.name)[1:] or not top]
    # Python 3.12's filter repeats the checks above as extraction proceeds.
    extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    try:
        tar.extractall(dest, members=kept, **extra)
    except (tarfile.TarError, OSError, EOFError) as e:
        shutil.rmtree(dest, ignore_errors=True)
        refuse(archive, f"unpacking failed ({e})")


if __name__ == "__main__":
    main()
