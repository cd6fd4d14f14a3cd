import ActorQueue
import Foundation
import Testing

// How a document's example is run and its output checked.
//
// Each example is a `// snippet: NAME` … `// end snippet` region of a test, kept character for
// character equal to the document's block by `.ci/snippets.py`. The test shadows `print` with a
// local function that writes to a `Transcript`, runs the region, and compares what was printed
// with the document's `<!-- output: NAME -->` block, read from the document itself (so the text
// a reader sees is the text the test checks). In an expected line, `…` stands for any run of
// characters (a sequence number, a timing).

/// What an example printed, line by line; safe to write from any thread.
final class Transcript: Sendable {
  private let storage = LockedValue<[String]>([])

  /// Appends what `print(items, separator:)` would write (one or more lines).
  func print(_ items: [Any], separator: String = " ") {
    let text = items.map { "\($0)" }.joined(separator: separator)
    storage.withLock {
      $0.append(contentsOf: text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
    }
  }

  /// Every line printed so far.
  var lines: [String] { storage.withLock { $0 } }
}

/// The package's root directory (this file is `Tests/DocumentationTests/Support/Transcript.swift`).
private let packageRoot = URL(fileURLWithPath: #filePath)
  .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent()

/// The documents whose examples are checked (the same list as `.ci/snippets.py`).
private func documents() throws -> [URL] {
  var urls = [
    packageRoot.appendingPathComponent("README.md"), packageRoot.appendingPathComponent("Migration.md"),
  ]
  for catalog in ["Sources/ActorQueue/ActorQueue.docc", "Sources/OperationAdapter/OperationAdapter.docc"] {
    let directory = packageRoot.appendingPathComponent(catalog)
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
    urls += names.filter { $0.hasSuffix(".md") }.sorted().map { directory.appendingPathComponent($0) }
  }
  return urls
}

/// The lines of the fenced block that follows `<!-- output: name -->` in a document.
func documentedOutput(_ name: String) throws -> [String] {
  let marker = "<!-- output: \(name) -->"
  for url in try documents() {
    let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
    guard let index = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == marker }) else {
      continue
    }
    guard
      let open = lines[(index + 1)...].firstIndex(where: {
        $0.trimmingCharacters(in: .whitespaces).hasPrefix("```")
      }),
      let close = lines[(open + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" })
    else { break }
    return Array(lines[(open + 1)..<close])
  }
  Issue.record("No block marked \(marker) in README.md, Migration.md or the DocC articles")
  return []
}

/// Whether `line` matches `pattern`, where `…` in the pattern stands for any run of characters.
func matches(_ line: String, _ pattern: String) -> Bool {
  let parts = pattern.components(separatedBy: "…")
  guard parts.count > 1 else { return line == pattern }
  guard line.hasPrefix(parts[0]) else { return false }
  var rest = line.dropFirst(parts[0].count)
  for (offset, part) in parts.dropFirst().enumerated() {
    if offset == parts.count - 2 { return rest.hasSuffix(part) && rest.count >= part.count }
    guard let range = rest.range(of: part) else { return false }
    rest = rest[range.upperBound...]
  }
  return true
}

/// Checks that `transcript` printed exactly the lines of the document's output block `name`.
func expectOutput(
  _ transcript: Transcript, _ name: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let expected = try documentedOutput(name)
  let printed = transcript.lines
  let same = printed.count == expected.count && zip(printed, expected).allSatisfy { matches($0, $1) }
  #expect(
    same,
    "the output of \(name) differs from its document:\n--- printed\n\(printed.joined(separator: "\n"))\n--- documented\n\(expected.joined(separator: "\n"))",
    sourceLocation: sourceLocation)
}
