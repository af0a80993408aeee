#!/usr/bin/env python3
"""Tests scripts/docs.py's making of DocC articles on pages written for the purpose: links to pages
and headings become DocC links, a link or an image that leads nowhere fails and is named, code
blocks are left as they are, and a catalog that no longer matches its pages is found out.

    python3 scripts/test_docs.py
"""

import contextlib
import importlib.util
import io
import tempfile
import unittest
from pathlib import Path

spec = importlib.util.spec_from_file_location("docs", Path(__file__).resolve().parent / "docs.py")
docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs)

README = """# Project

Start with [caching](docs/caching.md) and its [audience](docs/caching.md#audience-one-user-or-many);
see [CHANGELOG.md](CHANGELOG.md) and [the changes](CHANGELOG.md).
"""

CACHING = """# Caching

Back to [the start](../README.md), [down](#retry-after-and-3xx-the-head-case), [a wrapped
link](#audience-one-user-or-many), [away](https://example.com/a.md) and ![a chart](samples/chart.svg).
Write `[text](nowhere.md)` for a link; [`samples/chart.svg`](samples/chart.svg) is a file.

```swift
let link = "[not a link](nowhere.md)"
```

> ```
> [quoted code](nowhere.md)
> ```

## Dashes — and symbols → C++

## Audience: one user or many

## `Retry-After` and 3xx (the `HEAD` case)

## Notes

## Notes
"""


class ArticlesTests(unittest.TestCase):
    def setUp(self):
        quiet = contextlib.redirect_stdout(io.StringIO())
        quiet.__enter__()
        self.addCleanup(quiet.__exit__, None, None, None)
        self.folder = tempfile.TemporaryDirectory()
        root = Path(self.folder.name)
        (root / "docs/samples").mkdir(parents=True)
        (root / "README.md").write_text(README)
        (root / "CHANGELOG.md").write_text("# Changelog\n")
        (root / "docs/caching.md").write_text(CACHING)
        (root / "docs/samples/chart.svg").write_text("<svg/>")
        self.root = root
        self.saved = docs.ROOT, docs.CATALOG, docs.ARTICLES, docs.RESOURCES
        docs.ROOT = root
        docs.CATALOG = root / "Sources/Recall/Recall.docc"
        docs.ARTICLES = docs.CATALOG / "Articles"
        docs.RESOURCES = docs.CATALOG / "Resources"

    def tearDown(self):
        docs.ROOT, docs.CATALOG, docs.ARTICLES, docs.RESOURCES = self.saved
        self.folder.cleanup()

    def test_anchors_as_github_and_docc_make_them(self):
        self.assertEqual(docs.github_slug("Audience: one user or many"), "audience-one-user-or-many")
        self.assertEqual(docs.docc_fragment("Audience: one user or many"), "Audience-one-user-or-many")
        self.assertEqual(docs.github_slug("`Retry-After` and 3xx (the `HEAD` case)"), "retry-after-and-3xx-the-head-case")
        self.assertEqual(docs.docc_fragment("`Retry-After` and 3xx (the `HEAD` case)"), "Retry-After-and-3xx-the-HEAD-case")
        self.assertEqual(docs.docc_fragment("Dashes — and symbols → C++"), "Dashes-and-symbols-→-C++")
        self.assertEqual(docs.anchors("docs/caching.md")["dashes--and-symbols--c"], "Dashes-and-symbols-→-C++")
        self.assertIsNone(docs.anchors("docs/caching.md")["notes-1"])  # two "Notes": DocC cannot tell them apart
        self.assertNotIn("caching", docs.anchors("docs/caching.md"))  # the title has no anchor in DocC

    def test_links_become_docc_links(self):
        made = docs.made_catalog()
        start, caching = made["Articles/GettingStarted.md"], made["Articles/caching.md"]
        self.assertTrue(start.startswith("# Getting Started\n\n<!-- Made from README.md"))
        self.assertIn("[caching](<doc:caching>)", start)
        self.assertIn("[audience](<doc:caching#Audience-one-user-or-many>)", start)
        self.assertIn("see `CHANGELOG.md` and the changes (`CHANGELOG.md`).", start)
        self.assertIn("[the start](<doc:GettingStarted>)", caching)
        self.assertIn("[down](<doc:caching#Retry-After-and-3xx-the-HEAD-case>)", caching)
        self.assertIn("[a wrapped\nlink](<doc:caching#Audience-one-user-or-many>)", caching)
        self.assertIn("Write `[text](nowhere.md)` for a link; `samples/chart.svg` (`docs/samples/chart.svg`) is a file.", caching)
        self.assertIn("> [quoted code](nowhere.md)", caching)
        self.assertIn("[away](https://example.com/a.md)", caching)
        self.assertIn("![a chart](chart.svg)", caching)
        self.assertIn('let link = "[not a link](nowhere.md)"', caching)
        self.assertEqual(made["Resources/chart.svg"], ("link", "../../../../docs/samples/chart.svg"))

    def test_a_link_to_a_missing_or_repeated_heading_fails_and_is_named(self):
        (self.root / "docs/caching.md").write_text(CACHING + "\n[here](#notes-2) and [there](#notes-1)\n")
        with self.assertRaises(docs.DocsError) as failure:
            docs.made_catalog()
        self.assertIn("docs/caching.md: the link #notes-2 names no heading", str(failure.exception))
        self.assertIn("docs/caching.md: the link #notes-1 names a heading docs/caching.md has twice", str(failure.exception))

    def test_link_forms_docc_would_not_resolve_fail_and_are_named(self):
        (self.root / "README.md").write_text(README + '[titled](docs/caching.md "Caching")\n\n[ref]: docs/caching.md\n')
        with self.assertRaises(docs.DocsError) as failure:
            docs.made_catalog()
        self.assertIn("a link with a title", str(failure.exception))
        self.assertIn("a reference-style link definition", str(failure.exception))

    def test_two_images_with_one_name_fail(self):
        (self.root / "docs/chart.svg").write_text("<svg/>")
        (self.root / "README.md").write_text(README + "![one](docs/chart.svg)\n")
        with self.assertRaisesRegex(docs.DocsError, r"has the name of another image \(chart.svg\)"):
            docs.made_catalog()

    def test_a_link_to_a_missing_file_or_image_fails_and_is_named(self):
        (self.root / "README.md").write_text(README + "[gone](docs/gone.md) ![gone](docs/gone.svg)\n")
        with self.assertRaises(docs.DocsError) as failure:
            docs.made_catalog()
        self.assertIn("README.md: the link docs/gone.md names no file", str(failure.exception))
        self.assertIn("README.md: the image docs/gone.svg does not exist", str(failure.exception))

    def test_a_catalog_that_no_longer_matches_its_pages_is_found(self):
        docs.update()
        docs.check_current()  # just made: current
        (self.root / "docs/caching.md").write_text(CACHING + "\nOne more line.\n")
        with self.assertRaisesRegex(docs.DocsError, r"scripts/docs.sh --update(.|\n)*Articles/caching.md"):
            docs.check_current()
        docs.update()
        (docs.ARTICLES / "extra.md").write_text("# Extra\n")
        with self.assertRaisesRegex(docs.DocsError, r"Articles/extra.md"):
            docs.check_current()


if __name__ == "__main__":
    unittest.main()
