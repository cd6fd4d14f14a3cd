#!/usr/bin/env python3
"""Keeps the documents' Swift code and its compiled, tested copy equal.

Every ```swift block of README.md, Migration.md and the DocC articles
(Sources/*/*.docc/*.md) is preceded by one of these markers:

    <!-- snippet: NAME -->           compiled and run: Tests/DocumentationTests holds the same
                                     lines between `// snippet: NAME` and `// end snippet`
    <!-- no-compile: REASON -->      not compiled (Darwin-only code, a Package.swift fragment,
                                     code Swift 6 forbids); the reason is shown to maintainers

A snippet region is compared after removing the indentation of its `// snippet:` line. Import
lines at the top of a document's block are not part of the region: the file that holds it must
import the same modules. Each region belongs to exactly one block, and each block to exactly
one region.

    <!-- output: NAME -->            the fenced block after it is what snippet NAME prints; the
                                     test reads it from the document and compares (the checker
                                     makes sure a test does: expectOutput(transcript, "NAME"))

It also refuses the labels of an unshipped specification (P1–P12, "scenario N") in the documents
and the libraries' doc comments.

Usage: snippets.py [--self-test]. Exit status 1, with every difference listed, when a document
and its copy have drifted apart, when a Swift block has no marker, or when a region or an output
has no counterpart. --self-test first proves the checker catches each of those on altered copies.
"""

import difflib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SNIPPET = re.compile(r"^\s*<!-- snippet: ([\w./-]+) -->\s*$")
NO_COMPILE = re.compile(r"^\s*<!-- no-compile: .+ -->\s*$")
MANIFEST = re.compile(r"^\s*<!-- consumer-manifest -->\s*$")
OUTPUT = re.compile(r"^\s*<!-- output: ([\w./-]+) -->\s*$")
FENCE = re.compile(r"^(\s*)```\s*(\S*)")
REGION_START = re.compile(r"^(\s*)// snippet: ([\w./-]+)\s*$")
REGION_END = re.compile(r"^\s*// end snippet\s*$")
IMPORT = re.compile(r"^(@preconcurrency )?import \w+$")
EXPECT_OUTPUT = re.compile(r'expectOutput\(\s*\w+\s*,\s*"([\w./-]+)"')


def documents():
    paths = [ROOT / "README.md", ROOT / "Migration.md"]
    paths += sorted(ROOT.glob("Sources/*/*.docc/*.md"))
    return {str(p.relative_to(ROOT)): p.read_text().split("\n") for p in paths if p.exists()}


def sources():
    paths = sorted((ROOT / "Tests" / "DocumentationTests").rglob("*.swift"))
    return {str(p.relative_to(ROOT)): p.read_text().split("\n") for p in paths}


def parse_documents(docs, errors):
    """Returns {name: (doc, line, imports, lines)} for snippets, {name: (doc, line)} for outputs,
    and [(doc, line, lines)] for consumer manifests."""
    snippets, outputs, manifests = {}, {}, []
    for doc, lines in docs.items():
        i = 0
        while i < len(lines):
            fence = FENCE.match(lines[i])
            if not fence:
                i += 1
                continue
            indent, language = fence.group(1), fence.group(2)
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                errors.append(f"{doc}:{i + 1}: a code block that never closes")
                break
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end]]
            previous = i - 1
            while previous >= 0 and not lines[previous].strip():
                previous -= 1
            marker = lines[previous] if previous >= 0 else ""
            if OUTPUT.match(marker):
                name = OUTPUT.match(marker).group(1)
                if name in outputs:
                    errors.append(f"{doc}:{previous + 1}: output {name} is documented twice")
                outputs[name] = (doc, previous + 1)
            if language == "swift":
                named = SNIPPET.match(marker)
                if named:
                    name = named.group(1)
                    if name in snippets:
                        errors.append(f"{doc}:{previous + 1}: snippet {name} is used twice")
                    imports = []
                    while body and IMPORT.match(body[0]):
                        imports.append(body.pop(0))
                    while body and not body[0].strip() and imports:
                        body.pop(0)
                    snippets[name] = (doc, i + 1, imports, body)
                elif MANIFEST.match(marker):
                    manifests.append((doc, i + 1, body))
                elif not NO_COMPILE.match(marker):
                    errors.append(
                        f"{doc}:{i + 1}: a ```swift block without a marker: precede it with "
                        "<!-- snippet: NAME --> (and add the region to Tests/DocumentationTests) "
                        "or <!-- no-compile: REASON -->")
            i = end + 1
    if [m[0] for m in manifests] != ["README.md"]:
        errors.append("exactly one <!-- consumer-manifest --> block is expected, in README.md")
    return snippets, outputs, manifests


def outputs_text(docs):
    """{name: lines of the fenced block after <!-- output: name -->}."""
    result = {}
    for lines in docs.values():
        for i, line in enumerate(lines):
            named = OUTPUT.match(line)
            if not named:
                continue
            start = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
            end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
            result[named.group(1)] = lines[start + 1:end]
    return result


def parse_sources(srcs, errors):
    """Returns {name: (file, line, imports_of_file, lines)} and the set of outputs tests check."""
    regions, checked = {}, set()
    for path, lines in srcs.items():
        imports = {line.strip() for line in lines if IMPORT.match(line.strip())}
        checked |= set(EXPECT_OUTPUT.findall("\n".join(lines)))
        i = 0
        while i < len(lines):
            start = REGION_START.match(lines[i])
            if not start:
                if REGION_END.match(lines[i]):
                    errors.append(f"{path}:{i + 1}: `// end snippet` without a start")
                i += 1
                continue
            indent, name = start.group(1), start.group(2)
            end = i + 1
            while end < len(lines) and not REGION_END.match(lines[end]) and not REGION_START.match(lines[end]):
                end += 1
            if end == len(lines) or not REGION_END.match(lines[end]):
                errors.append(f"{path}:{i + 1}: snippet {name} has no `// end snippet`")
                i = end
                continue
            body = []
            for number, line in enumerate(lines[i + 1:end], start=i + 2):
                if line.strip() and not line.startswith(indent):
                    errors.append(f"{path}:{number}: line of snippet {name} is indented less than its marker")
                body.append(line[len(indent):] if line.startswith(indent) else line.strip())
            if name in regions:
                errors.append(f"{path}:{i + 1}: snippet {name} has two regions")
            regions[name] = (path, i + 1, imports, body)
            i = end + 1
    return regions, checked


LABEL = re.compile(r"\bP(?:[1-9]|1[0-2])\b|\b[Ss]cenario \d")


def labels():
    """Pitfall and scenario labels (P1–P12, "scenario 5") from a specification that does not
    ship with the package: a reader cannot follow them, so the documents and the public doc
    comments say what they mean in words instead."""
    found = []
    for doc, lines in documents().items():
        found += [f"{doc}:{n}: {l.strip()}" for n, l in enumerate(lines, 1) if LABEL.search(l)]
    for path in sorted(ROOT.glob("Sources/ActorQueue/**/*.swift")) + sorted(ROOT.glob("Sources/OperationAdapter/**/*.swift")):
        for n, line in enumerate(path.read_text().split("\n"), 1):
            if line.strip().startswith("///") and LABEL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    return [f"{place}  <- an unshipped label; say what it means instead" for place in found]


def check(docs, srcs):
    errors = labels()
    snippets, outputs, _ = parse_documents(docs, errors)
    regions, checked = parse_sources(srcs, errors)
    for name, (doc, line, imports, body) in sorted(snippets.items()):
        if name not in regions:
            errors.append(f"{doc}:{line}: snippet {name} has no region `// snippet: {name}` in Tests/DocumentationTests")
            continue
        path, region_line, file_imports, region = regions[name]
        for statement in imports:
            if statement not in file_imports:
                errors.append(f"{doc}:{line}: snippet {name} imports `{statement}`, {path} does not")
        strip = lambda lines: [l.rstrip() for l in lines]
        if strip(body) != strip(region):
            diff = difflib.unified_diff(
                strip(body), strip(region), f"{doc}:{line} ({name})", f"{path}:{region_line}", lineterm="")
            errors.append(f"snippet {name}: the document and its compiled copy differ\n" + "\n".join(diff))
    for name, (path, line, _, _) in sorted(regions.items()):
        if name not in snippets:
            errors.append(f"{path}:{line}: region {name} belongs to no ```swift block of a document")
    for name, (doc, line) in sorted(outputs.items()):
        if name not in checked:
            errors.append(f"{doc}:{line}: output {name} is checked by no test (expectOutput(transcript, \"{name}\"))")
    for name in sorted(checked - outputs.keys()):
        errors.append(f"a test expects output {name}, which no document shows (<!-- output: {name} -->)")
    return errors, len(snippets)


def self_test(docs, srcs):
    """Each kind of drift, made on a copy, must be reported."""
    snippets, _, _ = parse_documents(docs, [])
    if not snippets:
        return ["self-test: no snippet in the documents"]
    name, (doc, line, imports, body) = sorted(snippets.items())[0]
    failures = []

    def expect_error(description, altered_docs, altered_srcs, needle):
        errors, _ = check(altered_docs, altered_srcs)
        if not any(needle in error for error in errors):
            failures.append(f"self-test: {description} was not reported")

    edited = {k: list(v) for k, v in docs.items()}
    index = line  # the first line of the block's body (lines are 1-based, the fence is at line)
    while not edited[doc][index].strip() or IMPORT.match(edited[doc][index].strip()):
        index += 1
    edited[doc][index] += " // drifted"
    expect_error("an edited document line", edited, srcs, "differ")

    unmarked = {k: list(v) for k, v in docs.items()}
    unmarked[doc] = unmarked[doc] + ["", "```swift", "let unchecked = 1", "```"]
    expect_error("an unmarked Swift block", unmarked, srcs, "without a marker")

    orphan = {k: list(v) for k, v in srcs.items()}
    first = sorted(orphan)[0]
    orphan[first] = orphan[first] + ["// snippet: orphan-region", "let x = 1", "// end snippet"]
    expect_error("a region no document uses", docs, orphan, "belongs to no")

    removed = {k: [l for l in v if l.strip() != f"// snippet: {name}"] for k, v in srcs.items()}
    expect_error("a snippet without its region", docs, removed, "has no region")
    return failures


def matches(line, pattern):
    """Whether line matches pattern, where … in the pattern stands for any run of characters."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("…")), line) is not None


def consumer(directory):
    """Builds README's manifest as a package of its own, beside a link to this one named
    ActorQueue, with README's Quick start as its main.swift; runs it and compares what it prints
    with README's output block; runs README's test (readme-testing) in the manifest's test
    target, if it has one. Returns the list of problems."""
    import shutil
    import subprocess

    docs = documents()
    errors = []
    snippets, _, manifests = parse_documents(docs, [])  # the check itself reports those problems
    if "quick-start" not in snippets or not manifests:
        return ["README.md needs a quick-start snippet and a <!-- consumer-manifest --> block"]
    manifest = "\n".join(manifests[0][2]) + "\n"
    target = re.search(r'\.executableTarget\(\s*name:\s*"(\w+)"', manifest)
    if not target:
        return ["README.md's manifest declares no executable target"]
    name = target.group(1)
    root = pathlib.Path(directory)
    shutil.rmtree(root, ignore_errors=True)
    (root / "App" / "Sources" / name).mkdir(parents=True)
    (root / "ActorQueue").symlink_to(ROOT)
    (root / "App" / "Package.swift").write_text(manifest)
    _, _, imports, body = snippets["quick-start"]
    (root / "App" / "Sources" / name / "main.swift").write_text("\n".join(imports + [""] + body) + "\n")
    tests = re.search(r'\.testTarget\(\s*name:\s*"(\w+)"', manifest)
    if tests:
        # README's test of code with a deadline, as the manifest's test target: it must build
        # against the ActorQueueTesting product and pass.
        if "readme-testing" not in snippets:
            return ["README.md's manifest has a test target but README has no readme-testing snippet"]
        (root / "App" / "Tests" / tests.group(1)).mkdir(parents=True)
        _, _, test_imports, test_body = snippets["readme-testing"]
        (root / "App" / "Tests" / tests.group(1) / "Tests.swift").write_text(
            "\n".join(test_imports + [""] + test_body) + "\n")
    build = subprocess.run(["swift", "build", "--product", name], cwd=root / "App", capture_output=True, text=True)
    if build.returncode != 0:
        return ["the README's manifest and Quick start do not build as a package:\n" + build.stdout + build.stderr]
    if tests:
        test = subprocess.run(["swift", "test"], cwd=root / "App", capture_output=True, text=True)
        if test.returncode != 0 or "passed" not in test.stdout + test.stderr:
            return ["README's test, in the manifest's test target, did not pass:\n" + test.stdout + test.stderr]
    run = subprocess.run(
        [str(root / "App" / ".build" / "debug" / name)], capture_output=True, text=True, timeout=120)
    printed = run.stdout.rstrip("\n").split("\n")
    expected = outputs_text(docs).get("quick-start", [])
    if run.returncode != 0:
        errors.append(f"the Quick start exited with status {run.returncode}:\n{run.stderr}")
    if len(printed) != len(expected) or not all(matches(p, e) for p, e in zip(printed, expected)):
        errors.append("the Quick start, run as a package's main.swift, printed:\n" + "\n".join(printed)
                      + "\nREADME.md says:\n" + "\n".join(expected))
    return errors


def main():
    if "--consumer" in sys.argv:
        problems = consumer(sys.argv[sys.argv.index("--consumer") + 1])
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print("snippets: README's manifest builds as a package, its Quick start prints what README shows, its test passes")
        return 0
    docs, srcs = documents(), sources()
    if "--self-test" in sys.argv:
        failures = self_test(docs, srcs)
        for failure in failures:
            print(failure)
        if failures:
            return 1
        print("snippets: self-test passed (drift, unmarked blocks, orphans and missing regions are caught)")
    errors, count = check(docs, srcs)
    for error in errors:
        print(error, end="\n\n")
    if errors:
        print(f"snippets: {len(errors)} problem(s)")
        return 1
    print(f"snippets: {count} Swift blocks in {len(docs)} documents match their compiled copies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
