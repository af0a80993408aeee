#!/usr/bin/env python3
"""Checks that each folder of Sources/Recall touches only what docs/architecture.md ("The folders")
says it may: a file that names a type declared in a folder its own may not touch fails the check.

    python3 scripts/check-layout.py

A type belongs to the folder of the file that declares it at the top level. Names in comments and
string literals do not count. Exit status 1 with one line per offence, else 0.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "Recall")
EVERY = ["Pipeline", "HTTP", "Retry", "Transports", "Cache", "Coordination", "Storage", "Support"]
STORAGES = ["Storage/Memory", "Storage/Disk", "Storage/Tiered", "Storage/Eviction"]

# folder (prefix) -> (folders it may not touch, names of theirs it may still use)
RULES = {
    "Support": ([f for f in EVERY if f != "Support"], set()),
    "HTTP": ([f for f in EVERY if f not in ("HTTP", "Support")], set()),
    # A body may be a stored file, an event the cache's.
    "Pipeline": (["Cache", "Storage", "Coordination", "Transports/URLSession", "Transports/URLProtocol"], {"StoredBodyFile", "CacheEvent"}),
    "Retry": (["Cache", "Storage", "Coordination"], set()),
    "Transports": (["Cache", "Storage", "Coordination"], set()),
    # The hook asks a storage what it offers; it never reaches into eviction or names a concrete
    # storage but the memory a storage offers (its memory tier).
    "Cache/Hook": (["Storage/Eviction", "Storage/Tiered"], set()),
    # Decisions are values: no I/O, no waiting, no hooks; they read the request they decide on.
    "Cache/Decisions": (
        ["Storage/Contracts"] + STORAGES + ["Coordination", "Cache/Hook", "Cache/MemoryPath", "Pipeline"],
        {"CacheScheduling", "RecallResponse", "ResponseBody"},
    ),
    "Cache/MemoryPath": (["Cache/Decisions", "Pipeline", "Coordination"], set()),
    "Cache/Settings": (["Cache/Hook", "Cache/MemoryPath", "Coordination", "Pipeline"], set()),
    # It reads one value of the storages' contracts: the removal mark a coalesced fetch is named by.
    "Coordination": (["Cache", "Pipeline", "Storage/Contracts", "Storage/Records"] + STORAGES, {"RemovalMark"}),
    # A record's entry reads an entity tag's strength and the most pieces a record holds.
    "Storage": (["Cache/Hook", "Cache/Decisions", "Cache/MemoryPath"], {"CacheRules", "PartialContent"}),
    # Records are values and their bytes: nobody's lock or wait.
    "Storage/Records": (["Cache/Hook", "Cache/Decisions", "Cache/MemoryPath", "Coordination"], {"CacheRules", "PartialContent"}),
}

DECLARATION = re.compile(
    r"^(?:@[\w().,: \"]+\s+)*(?:(?:public|package|final|indirect)\s+)*(?:struct|class|enum|protocol|actor|typealias)\s+([A-Z]\w*)",
    re.M,
)
NOISE = re.compile(r"//.*?$|\"(?:\\.|[^\"\\])*\"", re.M)


def folder_of(path):
    return os.path.relpath(os.path.dirname(path), ROOT).replace(os.sep, "/")


def rule_for(folder):
    best = None
    for prefix in RULES:
        if folder == prefix or folder.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return RULES.get(best)


def within(folder, prefix):
    return folder == prefix or folder.startswith(prefix + "/")


def main():
    files = []
    for directory, _, names in os.walk(ROOT):
        if ".docc" in directory:
            continue
        files += [os.path.join(directory, n) for n in names if n.endswith(".swift")]
    home = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            for match in DECLARATION.finditer(f.read()):
                home.setdefault(match.group(1), folder_of(path))
    offences = []
    for path in sorted(files):
        folder = folder_of(path)
        rule = rule_for(folder)
        if rule is None:
            offences.append(f"{os.path.relpath(path, ROOT)}: folder {folder} has no line in the layout")
            continue
        forbidden, allowed = rule
        with open(path, encoding="utf-8") as f:
            text = NOISE.sub("", f.read())
        for name in sorted(set(re.findall(r"\b[A-Z]\w*\b", text))):
            other = home.get(name)
            if other is None or other == folder or name in allowed:
                continue
            if any(within(other, prefix) for prefix in forbidden):
                offences.append(f"Sources/Recall/{os.path.relpath(path, ROOT)}: names {name} ({other}/), which {folder}/ may not touch")
    for line in offences:
        print(line)
    if offences:
        print(f"check-layout: {len(offences)} offence(s); see docs/architecture.md, \"The folders\"", file=sys.stderr)
        return 1
    print(f"check-layout: {len(files)} files, each within its folder's role")
    return 0


if __name__ == "__main__":
    sys.exit(main())
