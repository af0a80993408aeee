import Foundation
import Testing

/// Every ```swift block of README.md and docs/*.md is compiled: it must appear, word for word
/// (indentation and `import` lines aside), between `// snippet: <page>` and `// end snippet` in
/// this folder's files, which the test target builds — or, for examples of an integration, in
/// the `DocSnippets` folder of that package's tests, which CI builds with the package. And every snippet here must still be on
/// its page, so an edited example cannot leave a stale compiled copy behind.
@Suite("Documentation code compiles")
struct DocSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent() // DocSnippets
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Lines trimmed, blank lines, `import` lines and the conditional around
    /// `import FoundationNetworking` dropped (its `#if` and the `#endif` that closes it, no
    /// other): what must match.
    static func normalized(_ lines: [Substring]) -> String {
        var kept: [String] = [], inImportCondition = false
        for line in lines.map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty && !line.hasPrefix("import ") {
            if line == importCondition.opening { inImportCondition = true; continue }
            if inImportCondition, line == importCondition.closing { inImportCondition = false; continue }
            kept.append(line)
        }
        return kept.joined(separator: "\n")
    }

    /// The lines of the conditional import every page's first example starts with.
    static let importCondition = (opening: "#if canImport(FoundationNetworking)", closing: "#endif")

    /// The raw first Swift block of a Markdown page, if it has one.
    static func firstBlock(of page: String) throws -> String? {
        let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        guard let start = text.range(of: "```swift\n") else { return nil }
        guard let end = text.range(of: "\n```", range: start.upperBound..<text.endIndex) else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// The Swift blocks of a Markdown page.
    static func blocks(of page: String) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        var blocks: [String] = [], current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") { current = []; continue }
            if let lines = current, line.hasPrefix("```") { blocks.append(normalized(lines)); current = nil; continue }
            current?.append(line)
        }
        return blocks
    }

    /// The folders holding snippets: this one, and `DocSnippets` in the test targets of the
    /// packages under `Integrations/` (whose examples need those packages to compile).
    static func snippetFolders() throws -> [URL] {
        var folders = [root.appendingPathComponent("Tests/RecallTests/DocSnippets")]
        let integrations = root.appendingPathComponent("Integrations")
        for package in (try? FileManager.default.contentsOfDirectory(atPath: integrations.path).sorted()) ?? [] {
            let tests = integrations.appendingPathComponent(package).appendingPathComponent("Tests")
            for target in (try? FileManager.default.contentsOfDirectory(atPath: tests.path).sorted()) ?? [] {
                let folder = tests.appendingPathComponent(target).appendingPathComponent("DocSnippets")
                if FileManager.default.fileExists(atPath: folder.path) { folders.append(folder) }
            }
        }
        return folders
    }

    /// The snippets in the snippet folders, by page.
    static func snippets() throws -> [(page: String, text: String)] {
        var found: [(String, String)] = []
        for folder in try snippetFolders() {
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() where file.hasSuffix("Snippets.swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                var page: String?, lines: [Substring] = []
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if trimmed.hasPrefix("// snippet: ") {
                        page = String(trimmed.dropFirst("// snippet: ".count)); lines = []
                    } else if trimmed == "// end snippet", let current = page {
                        found.append((current, normalized(lines))); page = nil
                    } else if page != nil {
                        lines.append(line)
                    }
                }
            }
        }
        return found
    }

    static var pages: [String] {
        get throws {
            let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 } + catalogPages()
        }
    }

    /// The hand-written pages of the DocC catalogs (`Sources/<Module>/<Module>.docc/*.md`, in this
    /// package and those under `Integrations/`): their landing pages. Their `Articles` are made
    /// from README.md and docs/*.md by scripts/docs.sh, so their blocks are those pages' blocks.
    static func catalogPages() -> [String] {
        let files = FileManager.default
        var packages = [""]
        for package in (try? files.contentsOfDirectory(atPath: root.appendingPathComponent("Integrations").path).sorted()) ?? [] {
            packages.append("Integrations/\(package)/")
        }
        var found: [String] = []
        for package in packages {
            let sources = package + "Sources"
            for module in (try? files.contentsOfDirectory(atPath: root.appendingPathComponent(sources).path).sorted()) ?? [] {
                let catalog = "\(sources)/\(module)/\(module).docc"
                for file in (try? files.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path).sorted()) ?? []
                where file.hasSuffix(".md") {
                    found.append("\(catalog)/\(file)")
                }
            }
        }
        return found
    }

    @Test("the catalogs' landing pages are among the pages: one per library module")
    func catalogPagesAreFound() {
        let pages = Self.catalogPages()
        for module in ["Recall", "RecallServices", "RecallTesting", "RecallReplay", "RecallPostgres"] {
            #expect(pages.contains { $0.hasSuffix("/\(module).docc/\(module).md") }, "no landing page for \(module) in \(pages)")
        }
    }

    @Test("every Swift block of the README and docs is compiled in DocSnippets")
    func everyBlockIsCompiled() throws {
        let snippets = try Self.snippets()
        var count = 0
        for page in try Self.pages {
            for (index, block) in try Self.blocks(of: page).enumerated() {
                count += 1
                #expect(snippets.contains { $0.page == page && $0.text == block },
                        "block \(index + 1) of \(page) is not in Tests/RecallTests/DocSnippets (copy it between `// snippet: \(page)` and `// end snippet`):\n\(block)")
            }
        }
        #expect(count >= 10) // the pages have Swift examples: a broken extraction would find none
    }

    @Test("every snippet is still on its page")
    func noStaleSnippets() throws {
        for snippet in try Self.snippets() {
            #expect(try Self.blocks(of: snippet.page).contains(snippet.text),
                    "a snippet for \(snippet.page) is no longer on the page; update or remove it:\n\(snippet.text)")
        }
    }

    @Test("every page's first Swift example has the imports a Linux user needs")
    func firstExampleHasImports() throws {
        for page in try Self.pages {
            guard let block = try Self.firstBlock(of: page) else { continue }
            let lines = Set(block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(lines.contains("import Foundation") && lines.contains("#if canImport(FoundationNetworking)")
                        && lines.contains { $0.hasPrefix("import FoundationNetworking") } && lines.contains("import Recall"),
                    "the first Swift block of \(page) must start with import Foundation, the conditional import FoundationNetworking and import Recall")
        }
    }

    @Test("comparing drops the import condition's #if and its #endif, and keeps every other conditional")
    func normalization() {
        let page: [Substring] = ["import Foundation", "#if canImport(FoundationNetworking)", "import FoundationNetworking", "#endif",
                                 "  #if os(Linux)", "let x = 1", "  #endif", ""]
        #expect(Self.normalized(page) == "#if os(Linux)\nlet x = 1\n#endif")
    }
}
