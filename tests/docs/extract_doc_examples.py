#!/usr/bin/env python3
"""Turns every ```cpp block of the given Markdown pages into C++ that
//tests/docs:doc_examples_test compiles, so a documented example that stops
compiling fails the build.

    extract_doc_examples.py OUT.cc [--source FILE]... PAGE.md...

Each block becomes the body of a function of its own (or, for blocks that
define functions, structs or modules, the contents of a namespace of its
own); its #include lines go to the top of the file. An HTML comment just
before the fence (invisible where the page is rendered) may give:

  <!-- doc-example: prelude: CODE -->   declarations the block assumes, e.g.
                                        the `model` and `loss` of a loop body
  <!-- doc-example: namespace-scope --> the block defines things (functions,
                                        structs) rather than running code
  <!-- doc-example: include: "x.h" -->  a header the block assumes (e.g. a
                                        generated .kindling.h)
  <!-- doc-example: excerpt-of: FILE -->
                                        the block (of any language) is an
                                        excerpt of FILE, a tested source
                                        given with --source: its lines must
                                        appear there in order, from any
                                        line on (a "..." line skips any
                                        number); it is checked,
                                        not compiled again

A block that cannot stand alone must say so with a prelude; there is no
way to skip one.
"""
import re
import sys

FENCE_OPEN = re.compile(r"^```cpp\s*$")
FENCE_CLOSE = re.compile(r"^```\s*$")
DIRECTIVE = re.compile(r"<!--\s*doc-example:\s*(.*?)\s*-->")


def blocks(path):
    """Yields (line number, directives, lines) for each ```cpp block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if FENCE_OPEN.match(lines[i]):
            directives = []
            j = i - 1
            while j >= 0 and (DIRECTIVE.search(lines[j]) or not lines[j].strip()):
                match = DIRECTIVE.search(lines[j])
                if match:
                    directives.append(match.group(1))
                j -= 1
            body = []
            k = i + 1
            while k < len(lines) and not FENCE_CLOSE.match(lines[k]):
                body.append(lines[k])
                k += 1
            if k == len(lines):
                sys.exit(f"{path}:{i + 1}: error: ```cpp block never closed")
            yield i + 1, directives, body
            i = k
        i += 1


FENCE_ANY = re.compile(r"^```\S*\s*$")


def check_excerpts(page, sources):
    """Checks every block marked excerpt-of against its source; returns how
    many it checked."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    checked = 0
    for i, text in enumerate(lines):
        match = DIRECTIVE.search(text)
        if not match or not match.group(1).startswith("excerpt-of:"):
            continue
        source = match.group(1)[len("excerpt-of:"):].strip()
        if source not in sources:
            sys.exit(f"{page}:{i + 1}: error: excerpt of {source}, which is "
                     "not a --source of the extractor")
        j = i + 1
        while j < len(lines) and (DIRECTIVE.search(lines[j]) or not lines[j].strip()):
            j += 1
        if j == len(lines) or not FENCE_ANY.match(lines[j]):
            sys.exit(f"{page}:{i + 1}: error: excerpt-of must precede a fence")
        with open(sources[source], encoding="utf-8") as f:
            source_lines = [t.strip() for t in f.read().split("\n") if t.strip()]
        # The excerpt's non-blank lines, cut at "..." into runs that must
        # each appear contiguously in the source (blank lines ignored), in
        # order; the earliest fit of each run is the right one.
        runs, run, k = [], [], j + 1
        while k < len(lines) and not FENCE_CLOSE.match(lines[k]):
            wanted = lines[k].strip()
            if wanted == "...":
                runs.append(run)
                run = []
            elif wanted:
                run.append((k + 1, wanted))
            k += 1
        runs.append(run)
        position = 0
        for run in (r for r in runs if r):
            texts = [text for _, text in run]
            found = next((p for p in range(position, len(source_lines) - len(texts) + 1)
                          if source_lines[p:p + len(texts)] == texts), None)
            if found is None:
                sys.exit(f"{page}:{run[0][0]}: error: the lines from `{texts[0]}` "
                         f"on are not in {source} as written (the excerpt and "
                         "the file disagree)")
            position = found + len(texts)
        checked += 1
    return checked


def main():
    args = sys.argv[1:]
    out_path = args.pop(0)
    sources = {}
    while args and args[0] == "--source":
        path = args[1]
        sources[path] = path
        args = args[2:]
    pages = args
    excerpts = sum(check_excerpts(page, sources) for page in pages)
    includes = []
    units = []
    for page in pages:
        for n, (line, directives, body) in enumerate(blocks(page)):
            tag = re.sub(r"\W", "_", page.split("/")[-1][:-3]) + f"_{line}"
            if any(d.startswith("excerpt-of:") for d in directives):
                continue  # checked against its source, which is compiled
            prelude = [d[len("prelude:"):].strip() for d in directives
                       if d.startswith("prelude:")]
            namespace_scope = "namespace-scope" in directives
            for d in directives:
                if d.startswith("include:"):
                    include = "#include " + d[len("include:"):].strip()
                    if include not in includes:
                        includes.append(include)
            unknown = [d for d in directives
                       if not d.startswith(("prelude:", "include:", "excerpt-of:"))
                       and d != "namespace-scope"]
            if unknown:
                sys.exit(f"{page}:{line}: error: unknown doc-example "
                         f"directive `{unknown[0]}`")
            # Line markers make a compiler error name the page and line.
            code = [f'#line {line + 1} "{page}"']
            for text in body:
                if text.startswith("#include"):
                    include = text.split("//")[0].strip()
                    if include not in includes:
                        includes.append(include)
                    code.append("")  # keeps the lines in step
                else:
                    code.append(text)
            where = f"// {page}:{line}"
            if namespace_scope:
                units.append(f"{where}\nnamespace doc_{tag} {{\n"
                             + "\n".join(prelude + code) + f"\n}}  // namespace doc_{tag}\n")
            else:
                units.append(f"{where}\n[[maybe_unused]] void Example_{tag}() {{\n"
                             + "\n".join(prelude + code) + "\n}\n")
    with open(out_path, "w", encoding="utf-8") as out:
        out.write("// Generated by tests/docs/extract_doc_examples.py: the ```cpp\n"
                  "// blocks of the documentation. Do not edit.\n")
        out.write("\n".join(includes) + "\n\n")
        out.write("#pragma GCC diagnostic ignored \"-Wunused-variable\"\n"
                  "#pragma GCC diagnostic ignored \"-Wunused-but-set-variable\"\n\n")
        out.write("\n".join(units))
        out.write("\nint main() { return 0; }\n")
    print(f"extract_doc_examples: {len(units)} examples compiled, "
          f"{excerpts} excerpts checked", file=sys.stderr)


if __name__ == "__main__":
    main()
