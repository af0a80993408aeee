#!/usr/bin/env python3
"""Recall's documentation in DocC form, built with the toolchain's `docc` (no package dependency):
every library product, the root package's and those of the packages under Integrations/.

The prose has one source: README.md and docs/*.md, which GitHub shows as they are. The articles
of the `Recall` catalog (Sources/Recall/Recall.docc/Articles) are made from them by this script,
so the Swift Package Index, Xcode and `docc` show the same pages with links that work in DocC:

- `[text](caching.md#audience-one-user-or-many)` becomes `[text](<doc:caching#Audience-one-user-or-many>)`
  (DocC then checks that the page and the heading exist);
- an image becomes a resource of the catalog (a symbolic link to the file under docs/);
- a link to another file of the repository (CHANGELOG.md, a sample capture) becomes its path;
- README.md becomes the article "Getting Started".

    scripts/docs.sh            # check the articles are current, build every module's documentation
                               # with warnings as errors, merge them, count undocumented public symbols
    scripts/docs.sh --update   # remake the articles after editing README.md or docs/*.md

The documentation is written to .build/docs/Recall.doccarchive (`docc preview` can serve a catalog).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "Sources/Recall/Recall.docc"
ARTICLES = CATALOG / "Articles"
RESOURCES = CATALOG / "Resources"
OUT = ROOT / ".build/docs"
# The library products, by package, in build order: the others link to Recall's symbols.
MODULES = [(".", "Recall"), (".", "RecallServices"), (".", "RecallTesting"), (".", "RecallReplay"),
           ("Integrations/RecallAsyncHTTPClient", "RecallAsyncHTTPClient"),
           ("Integrations/RecallOpenAPI", "RecallOpenAPI"),
           ("Integrations/RecallObservability", "RecallObservability"),
           ("Integrations/RecallPostgres", "RecallPostgres")]
BUNDLE_PREFIX = "org.recall."

GENERATED_NOTE = "<!-- Made from {source} by scripts/docs.sh --update: edit that file, not this one. -->"


class DocsError(Exception):
    pass


# MARK: - Pages


def pages():
    """(article name, source path relative to the root, title override) for every page."""
    found = [("GettingStarted", "README.md", "Getting Started")]
    for path in sorted((ROOT / "docs").glob("*.md")):
        found.append((path.stem, f"docs/{path.name}", None))
    return found


def outside_code(lines):
    """Yields (index, line) for the lines that are not inside a fenced code block."""
    fence = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence is None and marker:
            fence = marker.group(1)
            continue
        if fence is not None:
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        yield index, line


def plain_heading(text):
    """The text a reader sees in a heading: no code marks, emphasis or link targets."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "").replace("*", "").strip()


def github_slug(text):
    """The anchor GitHub gives a heading."""
    text = plain_heading(text).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def docc_fragment(text):
    """The anchor DocC gives a heading: whitespace and dash runs become one dash, punctuation goes."""
    parts = [part for part in re.split(r"[\s\-]+", plain_heading(text)) if part]
    joined = "-".join(parts)
    return "".join(c for c in joined if c == "-" or not unicodedata.category(c)[0] in "PS")


def anchors(source):
    """GitHub slug -> DocC fragment for every heading of a page."""
    lines = (ROOT / source).read_text(encoding="utf-8").split("\n")
    found, seen = {}, {}
    for _, line in outside_code(lines):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found[slug if count == 0 else f"{slug}-{count}"] = docc_fragment(heading.group(1))
    return found


LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")


def article(name, source, title, by_source):
    """The DocC article made from one page."""
    lines = (ROOT / source).read_text(encoding="utf-8").split("\n")
    base = Path(source).parent
    resources = {}
    problems = []

    def link(match):
        bang, text, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, doc:
            return match.group(0)
        path, _, fragment = target.partition("#")
        repo_path = os.path.normpath(base / path).replace(os.sep, "/") if path else source
        if bang:
            if not (ROOT / repo_path).is_file():
                problems.append(f"{source}: the image {target} does not exist")
                return match.group(0)
            resources[Path(repo_path).name] = repo_path
            return f"![{text}]({Path(repo_path).name})"
        if repo_path in by_source:
            target_name = by_source[repo_path]
            if not fragment:
                return f"[{text}](<doc:{target_name}>)"
            known = anchors(repo_path)
            if fragment not in known:
                problems.append(f"{source}: the link {target} names no heading of {repo_path}")
                return match.group(0)
            return f"[{text}](<doc:{target_name}#{known[fragment]}>)"
        if not (ROOT / repo_path).exists():
            problems.append(f"{source}: the link {target} names no file of the repository")
            return match.group(0)
        # A file that is not a page: its path, as the reader of the built documentation finds it.
        return f"{text} (`{repo_path}`)" if text.strip("`") != repo_path else f"`{repo_path}`"

    code = {index for index in range(len(lines))} - {index for index, _ in outside_code(lines)}
    output = []
    titled = False
    for index, line in enumerate(lines):
        if index in code:
            output.append(line)
            continue
        if not titled and line.startswith("# "):
            output.append(f"# {title}" if title else line)
            output.append("")
            output.append(GENERATED_NOTE.format(source=source))
            titled = True
            continue
        output.append(LINK.sub(link, line))
    if not titled:
        problems.append(f"{source}: a page must start with a `# Title` line")
    return "\n".join(output), resources, problems


def made_catalog():
    """{relative path: text or ('link', target)} of everything this script makes in the catalog."""
    by_source = {source: name for name, source, _ in pages()}
    files, problems = {}, []
    for name, source, title in pages():
        text, resources, found = article(name, source, title, by_source)
        problems += found
        files[f"Articles/{name}.md"] = text
        for file_name, repo_path in resources.items():
            files[f"Resources/{file_name}"] = ("link", os.path.relpath(ROOT / repo_path, RESOURCES))
    if problems:
        raise DocsError("links in the pages that lead nowhere:\n  " + "\n  ".join(problems))
    return files


def existing_catalog():
    files = {}
    for folder in (ARTICLES, RESOURCES):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            key = f"{folder.name}/{path.name}"
            files[key] = ("link", os.readlink(path)) if path.is_symlink() else path.read_text(encoding="utf-8")
    return files


def update():
    made = made_catalog()
    for folder in (ARTICLES, RESOURCES):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    for key, content in made.items():
        path = CATALOG / key
        if isinstance(content, tuple):
            os.symlink(content[1], path)
        else:
            path.write_text(content, encoding="utf-8")
    print(f"docs: {sum(1 for k in made if k.startswith('Articles/'))} articles and "
          f"{sum(1 for k in made if k.startswith('Resources/'))} resources written to {CATALOG.relative_to(ROOT)}")


def check_current():
    made, existing = made_catalog(), existing_catalog()
    stale = sorted(key for key in set(made) | set(existing) if made.get(key) != existing.get(key))
    if stale:
        raise DocsError("the DocC articles are not those README.md and docs/*.md make "
                        "(run scripts/docs.sh --update and commit the result):\n  " + "\n  ".join(stale))
    print(f"docs: the {len(made)} generated files of {CATALOG.relative_to(ROOT)} are current")


# MARK: - Build


def run(arguments, package="."):
    result = subprocess.run(arguments, cwd=ROOT / package, text=True, capture_output=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise DocsError(f"{' '.join(map(str, arguments[:2]))} failed in {package} (exit {result.returncode})")
    return result.stdout + result.stderr


def symbol_graphs(package):
    """Where `swift package dump-symbol-graph` wrote the package's symbol graphs (it builds first)."""
    output = run(["swift", "package", "dump-symbol-graph", "--minimum-access-level", "public",
                  "--emit-extension-block-symbols"], package)
    written = re.search(r"Files written to (\S+)", output)
    if not written:
        raise DocsError(f"swift package dump-symbol-graph did not say where it wrote {package}'s symbol graphs:\n" + output)
    return Path(written.group(1))


def module_graphs(graphs, module):
    """The module's symbol graph and those of its extensions to other modules."""
    return [graphs / f"{module}.symbols.json", *sorted(graphs.glob(f"{module}@*.symbols.json"))]


def undocumented(module, graphs):
    """Public symbols the module declares that have no doc comment."""
    missing = []
    for path in module_graphs(graphs, module):
        for symbol in json.loads(path.read_text())["symbols"]:
            # Extension blocks have no text of their own; symbols without a location are made by
            # the compiler (Hashable's members) or inherited from a protocol's extension.
            if symbol["kind"]["identifier"] == "swift.extension" or "location" not in symbol:
                continue
            if not symbol.get("docComment"):
                location = symbol["location"]
                file = Path(location["uri"].removeprefix("file://")).relative_to(ROOT)
                missing.append(f"{file}:{location['position']['line'] + 1}: {'.'.join(symbol['pathComponents'])}")
    return missing


def build():
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "modules").mkdir(parents=True)
    graphs_of = {package: symbol_graphs(package) for package, _ in MODULES}
    missing = [line for package, module in MODULES for line in undocumented(module, graphs_of[package])]
    if missing:
        raise DocsError(f"public symbols without a doc comment ({len(missing)}):\n  " + "\n  ".join(missing))
    archives = []
    for package, module in MODULES:
        graphs = graphs_of[package]
        inputs = OUT / "symbol-graphs" / module
        inputs.mkdir(parents=True)
        for path in module_graphs(graphs, module):
            shutil.copy(path, inputs)
        archive = OUT / "modules" / f"{module}.doccarchive"
        arguments = ["docc", "convert", ROOT / package / f"Sources/{module}/{module}.docc",
                     "--additional-symbol-graph-dir", inputs, "--output-path", archive,
                     "--fallback-display-name", module, "--fallback-bundle-identifier", BUNDLE_PREFIX + module,
                     "--enable-experimental-external-link-support", "--warnings-as-errors"]
        if archives:  # links to another module's symbols go to Recall's (one dependency: DocC takes one well)
            arguments += ["--dependency", archives[0]]
        output = run(arguments)
        if re.search(r"(?m)^(warning|error):", output):
            sys.stderr.write(output)
            raise DocsError(f"docc reported problems in {module}'s documentation")
        archives.append(archive)
    merged = OUT / "Recall.doccarchive"
    run(["docc", "merge", *archives, "--output-path", merged, "--synthesized-landing-page-name", "Recall"])
    pages_built = sum(1 for _ in (merged / "data/documentation").rglob("*.json"))
    print(f"docs: {len(MODULES)} modules, {pages_built} pages, no warnings, every public symbol documented: "
          f"{merged.relative_to(ROOT)}")


def main(arguments):
    try:
        if arguments == ["--update"]:
            update()
        elif arguments == []:
            check_current()
            build()
        else:
            sys.stderr.write(__doc__)
            return 2
    except DocsError as error:
        sys.stderr.write(f"error: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
