#!/usr/bin/env python3
"""Fails when a relative link in the project's Markdown points at nothing.

Why: the README is kept short by sending detail to docs/, so its links (and those between the
docs) are how a reader finds anything; a moved section must not leave a dead link behind. Checks
every `[text](target)` in README.md, AGENTS.md and docs/*.md whose target is not a URL: the file
must exist in the repository, and a `#fragment` must name a heading of that file (GitHub's rule:
lower case, punctuation dropped, spaces to hyphens, a `-N` suffix for repeats).

Usage: scripts/check-doc-links.py [ROOT]   (exit 1 and one line per dead link when any is found)
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def anchors(path):
    seen = {}
    out = set()
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
                continue
            m = None if fence else HEADING.match(line)
            if not m:
                continue
            text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", m.group(2))
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check(root):
    files = ["README.md", "AGENTS.md"]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))
    dead = []
    for rel in files:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        fence = False
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.startswith("```"):
                    fence = not fence
                if fence:
                    continue
                for m in LINK.finditer(line):
                    target = m.group(1) or m.group(2)
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                        continue
                    file_part, _, fragment = target.partition("#")
                    dest = path if not file_part else os.path.normpath(
                        os.path.join(os.path.dirname(path), file_part))
                    if not os.path.exists(dest):
                        dead.append(f"{rel}:{number}: {target}: no such file")
                    elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                        dead.append(f"{rel}:{number}: {target}: no heading #{fragment}")
    return dead


if __name__ == "__main__":
    dead = check(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    for line in dead:
        print(line)
    if dead:
        print(f"{len(dead)} dead link(s) in the project's Markdown")
        sys.exit(1)
    print("every relative link in README.md, AGENTS.md and docs/ resolves")
