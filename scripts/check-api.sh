#!/usr/bin/env bash
# Compares the public API of every library product — the root package's, and those of the packages
# under Integrations/ — with the baseline commit named in .api-baseline (the last release; see
# CONTRIBUTING.md, "Releasing"), using the toolchain's `swift package diagnose-api-breaking-changes`.
# A breaking change fails unless CHANGELOG.md's "Unreleased" section lists it under a "### Breaking"
# heading: the declaration, or a type it belongs to, named there (`MockTransport.send` or
# `MockTransport` both cover `func MockTransport.send(_:)`).
#
#   scripts/check-api.sh                  # against .api-baseline
#   scripts/check-api.sh --baseline REV   # against another commit (to try the check itself)
#
# The toolchain's command compares a package with a commit of the package's own repository, so an
# Integrations/ package (a subdirectory of this one, with the root as a path dependency) is
# compared in a repository made for the purpose under .build/api-check: a commit of the package as
# it was at the baseline, its dependency on Recall pointing to Recall as it was then, and a commit
# of the package as it is, pointing to Recall as it is (built in the package's own .build, where its
# dependencies are built already; the baseline is built once, and kept in .build/api-check). A package no file of which changed since
# the baseline is not compared: its API is what its own files declare (what it shows of Recall's
# types is compared with the root package).
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=""
if [ "${1:-}" = "--baseline" ]; then
    baseline="${2:?--baseline needs a commit}"
else
    baseline="$(grep -Ev '^\s*(#|$)' .api-baseline | head -n 1 | tr -d '[:space:]')"
fi
if [ -z "$baseline" ]; then
    echo "error: .api-baseline names no commit" >&2
    exit 1
fi
if ! baseline="$(git rev-parse --verify --quiet "$baseline^{commit}")"; then
    echo "error: the API baseline is not in this clone's history (a shallow clone? fetch it: git fetch --unshallow)" >&2
    exit 1
fi

root="$(pwd)"
report="$(mktemp)"
trap 'rm -f "$report" "$report.one" "$report.files"' EXIT

# library_modules DIRECTORY: the modules of the package's library products, one per line.
library_modules() {
    (cd "$1" && swift package dump-package) |
        python3 -c 'import json, sys; m = json.load(sys.stdin); print("\n".join(sorted({t for p in m["products"] if "library" in p["type"] for t in p["targets"]})))'
}

# diagnose DIRECTORY SCRATCH TREEISH [ARGUMENTS…]: runs the toolchain's command in DIRECTORY, with
# its builds in SCRATCH (a package's own .build: its dependencies are built there already), and adds its
# report to $report. Exit status 1 means breaks were found (checked against the CHANGELOG at the
# end); anything it prints besides its build log is shown. Each library module of the package
# must have its verdict in the report ("No breaking changes detected in M" or "N breaking changes
# detected in M"): a module that failed to compare is an error, whatever the others reported.
diagnose() {
    local directory="$1" scratch="$2" treeish="$3" status module
    shift 3
    set +e
    (cd "$directory" && swift package --scratch-path "$scratch" diagnose-api-breaking-changes "$treeish" "$@") >"$report.one" 2>&1
    status=$?
    set -e
    grep -Ev '^\[[0-9]+/[0-9]+\]|^Building for|^Build complete|^warning: .*unhandled|^ +/.*/\.build/|^(Fetching|Fetched|Computing|Computed|Cloning|Cloned|Updating|Updated|Creating working copy|Working copy of) ' \
        "$report.one" || true
    if [ "$status" -ne 0 ] && ! grep -q "API breakage:" "$report.one"; then
        echo "error: diagnose-api-breaking-changes failed in $directory (status $status) without a report of breaks" >&2
        exit 1
    fi
    if grep -Eq '^error:' "$report.one"; then
        echo "error: diagnose-api-breaking-changes reported an error in $directory (above)" >&2
        exit 1
    fi
    for module in $(library_modules "$directory"); do
        if ! grep -Eq "^(No breaking changes|[0-9]+ breaking changes?) detected in $module:?\$" "$report.one"; then
            echo "error: diagnose-api-breaking-changes gave no verdict on $module in $directory" >&2
            exit 1
        fi
    done
    cat "$report.one" >>"$report"
}

# point_at_recall MANIFEST PATH: the manifest's path dependency on Recall ("../..") points at PATH.
point_at_recall() {
    RECALL="$2" perl -pi -e 's#path: "\.\./\.\."#path: "$ENV{RECALL}"#' "$1"
    if ! grep -qF "path: \"$2\"" "$1"; then
        echo "error: $1 has no path dependency \"../..\" on Recall to point at $2" >&2
        exit 1
    fi
}

# commit REPOSITORY MESSAGE: commits everything in REPOSITORY. The same files make the same commit
# (fixed names and dates), so a baseline kept in --baseline-dir is found again on the next run.
commit() {
    git -C "$1" add -A
    GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
        git -C "$1" -c user.name="scripts/check-api.sh" -c user.email="check-api@recall.invalid" commit -q -m "$2"
}

echo "API of the root package's library products against $baseline"
diagnose . "$root/.build" "$baseline"

work=".build/api-check"
baseline_root="$root/$work/recall-$baseline"
for package in Integrations/*/; do
    package="${package%/}"
    name="$(basename "$package")"
    grep -q '\.library(' "$package/Package.swift" 2>/dev/null || continue
    if ! git cat-file -e "$baseline:$package/Package.swift" 2>/dev/null; then
        echo "$name: new since $baseline, nothing to compare"
        continue
    fi
    if git diff --quiet "$baseline" -- "$package" && [ -z "$(git ls-files --others --exclude-standard -- "$package")" ]; then
        echo "$name: no file changed since $baseline"
        continue
    fi
    echo "API of $name against $baseline"
    if [ ! -d "$baseline_root" ]; then   # made whole, then moved into place
        rm -rf "$baseline_root.partial"
        mkdir -p "$baseline_root.partial"
        git archive "$baseline" | tar -x -C "$baseline_root.partial"
        mv "$baseline_root.partial" "$baseline_root"
    fi
    repository="$root/$work/$name"
    rm -rf "$repository"
    mkdir -p "$repository"
    git -C "$repository" init -q
    git archive "$baseline" "$package" | tar -x -C "$repository" --strip-components=2
    point_at_recall "$repository/Package.swift" "$baseline_root"
    commit "$repository" "$name at $baseline"
    git -C "$repository" tag baseline
    find "$repository" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
    # The package's files as they are: tracked or new, not those git ignores (.build, Package.resolved).
    git -C "$package" ls-files -co --exclude-standard --deduplicate |
        while IFS= read -r file; do [ -e "$package/$file" ] && printf '%s\n' "$file"; done >"$report.files"
    tar -C "$package" -cf - -T "$report.files" | tar -x -C "$repository"
    point_at_recall "$repository/Package.swift" "$root"
    commit "$repository" "$name as it is"
    diagnose "$repository" "$root/$package/.build" baseline --baseline-dir "$root/$work/baselines/$name-$baseline"
done

python3 scripts/api-breaks-listed.py "$report" CHANGELOG.md
