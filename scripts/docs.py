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
    scripts/docs.sh --check    # only check the articles are current (instant: CI runs it first)

The documentation is written to .build/docs/Recall.doccarchive (`docc preview` can serve a catalog).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "Sources/Recall/Recall.docc"
ARTICLES = CATALOG / "Articles"
RESOURCES = CATALOG / "Resources"
OUT = ROOT / ".build/docs"
# The module the others link to (`/Recall/...`): built first, and given to them as a dependency.
FIRST = "Recall"
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
    """Yields (index, line) for the lines that are not inside a fenced code block (in a block
    quote too). Pages use fences, not indented code blocks."""
    fence = None
    for index, line in enumerate(lines):
        stripped = re.sub(r"^(\s*>)*", "", line).strip()
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
    """The anchor DocC gives a heading (swift-docc's urlReadableFragment): runs of whitespace,
    hyphens, en and em dashes become one hyphen; punctuation and backticks go, other symbols stay."""
    parts = [part for part in re.split(r"[\s\-\u2013\u2014]+", plain_heading(text)) if part]
    return "".join(c for c in "-".join(parts) if c == "-" or not unicodedata.category(c).startswith("P"))


def anchors(source):
    """GitHub slug -> DocC fragment for every section heading of a page (the title has none in
    DocC); None for a heading whose text another heading has too (DocC cannot tell them apart)."""
    lines = (ROOT / source).read_text(encoding="utf-8").split("\n")
    headings = [match.group(1) for _, line in outside_code(lines)
                if (match := re.match(r" {0,3}#{2,6}\s+(.*?)\s*#*\s*$", line))]
    fragments = [docc_fragment(heading) for heading in headings]
    found, seen = {}, {}
    for heading, fragment in zip(headings, fragments):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found[slug if count == 0 else f"{slug}-{count}"] = fragment if fragments.count(fragment) == 1 else None
    return found


LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)")
# Link forms the pages do not use, refused rather than left as links that lead nowhere in DocC.
UNSUPPORTED = [
    (re.compile(r"(?m)^ {0,3}\[[^\]]+\]:\s*\S"), "a reference-style link definition (write the link inline)"),
    (re.compile(r"\]\((?:<|[^()\s]*\s+[\"'(])"), "a link with a title or in angle brackets (write [text](path))"),
]


def links_outside_spans(text, change):
    """`text` with `change` applied to each link that does not start inside a code span."""
    spans = [span.span() for span in CODE_SPAN.finditer(text)]
    return LINK.sub(lambda match: match.group(0) if any(a <= match.start() < b for a, b in spans) else change(match), text)


def article(name, source, title, by_source, images):
    """The DocC article made from one page; `images` (resource name -> file, across pages) gets
    its images."""
    lines = (ROOT / source).read_text(encoding="utf-8").split("\n")
    base = Path(source).parent
    problems = []

    def link(match):
        bang, text, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, doc:
            return match.group(0)
        path, _, fragment = target.partition("#")
        repo_path = os.path.normpath(base / path).replace(os.sep, "/") if path else source
        if bang:
            resource = Path(repo_path).name
            if not (ROOT / repo_path).is_file():
                problems.append(f"{source}: the image {target} does not exist")
            elif images.setdefault(resource, repo_path) != repo_path:
                problems.append(f"{source}: the image {target} has the name of another image ({resource})")
            return f"![{text}]({resource})"
        if repo_path in by_source:
            target_name = by_source[repo_path]
            if not fragment:
                return f"[{text}](<doc:{target_name}>)"
            known = anchors(repo_path)
            if fragment not in known:
                problems.append(f"{source}: the link {target} names no heading of {repo_path}")
            elif known[fragment] is None:
                problems.append(f"{source}: the link {target} names a heading {repo_path} has twice (DocC cannot tell them apart)")
            else:
                return f"[{text}](<doc:{target_name}#{known[fragment]}>)"
            return match.group(0)
        if not (ROOT / repo_path).exists():
            problems.append(f"{source}: the link {target} names no file of the repository")
            return match.group(0)
        # A file that is not a page: its path, as the reader of the built documentation finds it.
        return f"{text} (`{repo_path}`)" if text.strip("`") != repo_path else f"`{repo_path}`"

    def prose(text):
        for pattern, what in UNSUPPORTED:
            for found in pattern.finditer(text):
                line = text[: found.start()].count("\n") + 1
                problems.append(f"{source}: {what}, in: {text.splitlines()[line - 1].strip()}")
        return links_outside_spans(text, link)

    # Runs of prose (a link's text may wrap onto the next line) between the code blocks.
    code = set(range(len(lines))) - {index for index, _ in outside_code(lines)}
    output, run, titled = [], [], False
    for index, line in enumerate(lines + [None]):
        if line is not None and index not in code and not (not titled and line.startswith("# ")):
            run.append(line)
            continue
        if run:
            output += prose("\n".join(run)).split("\n")
            run = []
        if line is None:
            break
        if index in code:
            output.append(line)
        else:
            output += [f"# {title}" if title else line, "", GENERATED_NOTE.format(source=source)]
            titled = True
    if not titled:
        problems.append(f"{source}: a page must start with a `# Title` line")
    return "\n".join(output), problems


def made_catalog():
    """{relative path: text or ('link', target)} of everything this script makes in the catalog."""
    by_source = {source: name for name, source, _ in pages()}
    files, problems, images = {}, [], {}
    for name, source, title in pages():
        text, found = article(name, source, title, by_source, images)
        problems += found
        files[f"Articles/{name}.md"] = text
    for file_name, repo_path in images.items():
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
            if path.name.startswith("."):  # .DS_Store and the like
                continue
            key = f"{folder.name}/{path.name}"
            files[key] = ("link", os.readlink(path)) if path.is_symlink() else path.read_bytes()
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
    made = {key: content.encode("utf-8") if isinstance(content, str) else content for key, content in made_catalog().items()}
    existing = existing_catalog()
    stale = sorted(key for key in set(made) | set(existing) if made.get(key) != existing.get(key))
    if stale:
        raise DocsError("the DocC articles are not those README.md and docs/*.md make "
                        "(run scripts/docs.sh --update and commit the result):\n  " + "\n  ".join(stale))
    print(f"docs: the {len(made)} generated files of {CATALOG.relative_to(ROOT)} are current")


# MARK: - Build


def run(arguments, package=".", stderr=True):
    """The command's output (stdout, and stderr unless `stderr` is false); fails when it does."""
    result = subprocess.run(arguments, cwd=ROOT / package, text=True, capture_output=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise DocsError(f"{' '.join(map(str, arguments[:3]))} failed in {package} (exit {result.returncode})")
    return result.stdout + (result.stderr if stderr else "")


# A diagnostic line of docc, alone or after a file position.
DIAGNOSTIC = re.compile(r"(?m)(^|: )(warning|error):")


def library_modules():
    """(package, module) for every library product's module: the root package's, then each
    Integrations/ package's, as their manifests say (`swift package dump-package`)."""
    packages = ["."] + sorted(str(path.parent.relative_to(ROOT)) for path in ROOT.glob("Integrations/*/Package.swift"))
    found = []
    for package in packages:
        manifest = json.loads(run(["swift", "package", "dump-package"], package, stderr=False))
        for product in manifest["products"]:
            if "library" in product["type"]:
                found += [(package, target) for target in product["targets"] if (package, target) not in found]
    found.sort(key=lambda item: (item[0] != ".", item[1] != FIRST))
    missing = [f"{package}/Sources/{module}/{module}.docc" for package, module in found
               if not (ROOT / package / f"Sources/{module}/{module}.docc").is_dir()]
    if missing:
        raise DocsError("library modules without a documentation catalog (add one, with a landing page):\n  " + "\n  ".join(missing))
    return found


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
            # A comment of its own: not one inherited from a protocol requirement it implements.
            if symbol.get("docComment", {}).get("uri") != symbol["location"]["uri"]:
                location = symbol["location"]
                file = Path(location["uri"].removeprefix("file://")).relative_to(ROOT)
                missing.append(f"{file}:{location['position']['line'] + 1}: {'.'.join(symbol['pathComponents'])}")
    return missing


def build():
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "modules").mkdir(parents=True)
    modules = library_modules()
    # One dump per package (it emits every module of the package).
    graphs_of = {package: symbol_graphs(package) for package in dict.fromkeys(package for package, _ in modules)}
    missing = [line for package, module in modules for line in undocumented(module, graphs_of[package])]
    if missing:
        raise DocsError(f"public symbols without a doc comment ({len(missing)}):\n  " + "\n  ".join(missing))
    archives = []
    for package, module in modules:
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
        if DIAGNOSTIC.search(output):
            sys.stderr.write(output)
            raise DocsError(f"docc reported problems in {module}'s documentation")
        archives.append(archive)
    merged = OUT / "Recall.doccarchive"
    output = run(["docc", "merge", *archives, "--output-path", merged, "--synthesized-landing-page-name", "Recall"])
    if DIAGNOSTIC.search(output):
        sys.stderr.write(output)
        raise DocsError("docc merge reported problems")
    pages_built = sum(1 for _ in (merged / "data/documentation").rglob("*.json"))
    print(f"docs: {len(modules)} modules, {pages_built} pages, no warnings, every public symbol documented: "
          f"{merged.relative_to(ROOT)}")


def main(arguments):
    try:
        if arguments == ["--update"]:
            update()
        elif arguments == ["--check"]:
            check_current()
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
