"""What the docs checks share: the markdown files of the repository, and the
end of a check (print each problem, then a count, and fail if there were any).
"""
import glob
import os
import subprocess


def markdown_files(root):
    """Every markdown file git tracks under ROOT (outside a git checkout,
    README.md and docs/*.md)."""
    run = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"], capture_output=True, text=True)
    if run.returncode == 0:
        return [os.path.join(root, f) for f in run.stdout.split("\0") if f]
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def report(problems, summary):
    """Prints each problem, then SUMMARY with their count; the exit status: 1 if any."""
    for problem in problems:
        print(problem)
    print(f"{summary}: {len(problems)} problems")
    return 1 if problems else 0
