#!/usr/bin/env python3
"""Whether every breaking change in a `swift package diagnose-api-breaking-changes` report is
listed in CHANGELOG.md's "Unreleased" section under a "### Breaking" heading: the declaration,
or a type it belongs to, named there. Exit status 1 (with the unlisted ones) when not.

    scripts/api-breaks-listed.py REPORT CHANGELOG.md
"""
import re, sys

report, changelog = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()

# The "Unreleased" section, and within it every "### Breaking" subsection.
unreleased = re.search(r"^## Unreleased\s*$(.*?)(?=^## |\Z)", changelog, re.M | re.S)
breaking = "" if not unreleased else "\n".join(
    m.group(1) for m in re.finditer(r"^### Breaking\s*$(.*?)(?=^### |^## |\Z)", unreleased.group(1), re.M | re.S))

def listed(name):
    """Whether `name` (A.b.c) or one of its enclosing names (A.b, A) is named in the Breaking text."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if re.search(r"(?<![\w.])" + re.escape(candidate) + r"(?![\w])", breaking):
            return True
    return False

unlisted = []
for line in report.splitlines():
    found = re.search(r"API breakage: (\S+) (.+?) has ", line)
    if not found:
        continue
    declaration = found.group(2)
    # `func A.b(_:c:)` → A.b; `accessor A.b.Get()` → A.b; `var A.b` → A.b
    name = re.sub(r"\(.*$", "", declaration).strip()
    name = re.sub(r"\.(Get|Set|Modify|Read|_modify|_read|init)$", "", name)
    if not listed(name):
        unlisted.append(line.strip())

if unlisted:
    print("\nerror: breaking API changes that CHANGELOG.md's Unreleased section does not list under "
          "\"### Breaking\" (name the declaration or its type there, with how to upgrade):", file=sys.stderr)
    for line in unlisted:
        print("  " + line, file=sys.stderr)
    sys.exit(1)
breaks = sum(1 for line in report.splitlines() if "API breakage:" in line)
print(f"API check: {breaks} breaking change(s), each listed under Breaking in CHANGELOG.md" if breaks
      else "API check: no breaking changes")
