#!/usr/bin/env python3
"""Checks that the code references in docs/state.md and docs/design.md still hold.

docs/state.md's census names each piece of state as `path:LINES` followed by its names:
every line given must hold its name (one name per line, or one name for all of them).
docs/design.md's flow tables (rows `| step | function | file |`) name functions and the files
that define them: every function must be defined in one of its row's files.

    check_refs.py [--root DIR]          fails, listing what no longer holds
    check_refs.py [--root DIR] --fix    rewrites docs/state.md's line numbers where each name's
                                        definition is unambiguous, then checks again

Registered as the ctest test docs_refs, so the README's test command (and CI) runs it.
"""

import argparse
import pathlib
import re
import sys

STATE_REF = re.compile(r"^\| `(?P<path>[^`:]+):(?P<lines>[0-9,\-]+)` (?P<rest>[^|]*)\|")
OWNER = re.compile(r"`([A-Za-z_][A-Za-z_0-9]*)(?:\(\))?`'s")
NAME = re.compile(r"`([A-Za-z_][A-Za-z_0-9]*)(?:\(\))?`(?!'s)")
PATHS = re.compile(r"`([A-Za-z_0-9./-]+\.(?:cc|h|py|cmake|txt))`")
CONTROL = ("return", "if", "else", "while", "for", "switch", "case", "throw", "delete", "new")


def expand(lines):
    out = []
    for part in lines.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def word_at(text, name):
    return re.search(r"(?<![A-Za-z_0-9])" + re.escape(name) + r"(?![A-Za-z_0-9])", text) is not None


def declarations(lines, name):
    """Line numbers (1-based) where `name` is declared or defined, not merely used."""
    decl = re.compile(
        r"(?<![A-Za-z_0-9.>])(?:[A-Za-z_0-9]+::)*" + re.escape(name) + r"\s*(\(|\[|=(?!=)|;|\{)"
    )
    found = []
    for i, text in enumerate(lines, 1):
        s = text.strip()
        if not s or s.startswith(("//", "#", "*", "/*")):
            continue
        first = re.match(r"[A-Za-z_]+", s)
        if first and first.group(0) in CONTROL:
            continue
        m = decl.search(text)
        if not m:
            continue
        head = text[: m.start()].strip()
        # A declaration has a type (or a storage keyword) before the name: `static X name`,
        # `thread_local T name[...]`, `std::atomic<int> name{...}`, `Foo& name()`.
        if head and re.search(r"[A-Za-z_0-9>*&]$", head) and not head.endswith(("return", "=")):
            found.append(i)
        elif text.startswith("def " + name) or text.lstrip().startswith("def " + name + "("):
            found.append(i)
    return found


def function_body(lines, owner):
    """The line numbers of function `owner`'s body (its definition starts at column 0)."""
    for start in declarations(lines, owner):
        if lines[start - 1][:1].isspace():
            continue
        end = start
        while end < len(lines) and lines[end - 1] != "}":
            end += 1
        return range(start, end + 1)
    return range(0)


def check_state(root, fix):
    doc = root / "docs" / "state.md"
    text = doc.read_text().splitlines()
    problems, changed = [], False
    for n, row in enumerate(text):
        m = STATE_REF.match(row)
        if not m:
            continue
        path, lines = m.group("path"), expand(m.group("lines"))
        names = NAME.findall(m.group("rest").split("|")[0])
        owners = OWNER.findall(m.group("rest").split("|")[0])
        file = root / path
        if not file.is_file():
            problems.append(f"docs/state.md:{n + 1}: {path} does not exist")
            continue
        src = file.read_text().splitlines()
        if not names:
            problems.append(f"docs/state.md:{n + 1}: no name given for {path}")
            continue
        if len(lines) == 1 and len(names) > 1:  # several names on one line
            lines = lines * len(names)
        if len(names) != len(lines) and len(names) != 1:
            problems.append(f"docs/state.md:{n + 1}: {len(lines)} lines but {len(names)} names ({path})")
            continue
        pairs = list(zip(lines, names)) if len(names) == len(lines) else [(ln, names[0]) for ln in lines]
        new_lines = []
        for i, (ln, name) in enumerate(pairs):
            ok = 1 <= ln <= len(src) and word_at(src[ln - 1], name)
            if ok:
                new_lines.append(ln)
                continue
            cands = declarations(src, name)
            if owners:  # a function's local static: only those in that function's body
                body = function_body(src, owners[min(i, len(owners) - 1)])
                cands = [c for c in cands if c in body]
            if fix and len(cands) == 1 or (fix and len(names) == 1 and len(cands) == len(lines)):
                new_lines.append(cands[0] if len(cands) == 1 else cands[lines.index(ln)])
                continue
            where = ", ".join(map(str, cands)) or "nowhere"
            problems.append(
                f"docs/state.md:{n + 1}: {path}:{ln} does not hold `{name}` (declared at: {where})"
            )
            new_lines.append(ln)
        if fix and new_lines != lines:
            spec = ",".join(map(str, sorted(set(new_lines))))
            text[n] = row.replace(f"`{path}:{m.group('lines')}`", f"`{path}:{spec}`", 1)
            changed = True
    if changed:
        doc.write_text("\n".join(text) + "\n")
    return problems


def defined_in(src_text, name):
    if declarations(src_text.splitlines(), name):
        return True
    return (
        re.search(r"\b(struct|class|enum class|using|def)\s+" + re.escape(name) + r"\b", src_text) is not None
    )


def check_design(root):
    doc = root / "docs" / "design.md"
    problems = []
    in_table = False
    for n, row in enumerate(doc.read_text().splitlines(), 1):
        if re.match(r"^\| *step *\| *function *\| *file *\|", row):
            in_table = True
            continue
        if not row.startswith("|"):
            in_table = False
            continue
        if not in_table or set(row) <= set("|- :"):
            continue
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) < 3:
            problems.append(f"docs/design.md:{n}: a flow row needs step | function | file")
            continue
        names = NAME.findall(cells[1])
        paths = PATHS.findall(cells[2])
        if not paths:
            problems.append(f"docs/design.md:{n}: no file named")
            continue
        texts = []
        for p in paths:
            f = root / p if (root / p).exists() else root / "src" / p
            if not f.is_file():
                problems.append(f"docs/design.md:{n}: {p} does not exist")
                continue
            texts.append(f.read_text())
        for name in names:
            if not any(defined_in(t, name) for t in texts):
                problems.append(f"docs/design.md:{n}: `{name}` is not defined in {', '.join(paths)}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[2]))
    ap.add_argument("--fix", action="store_true")
    args = ap.parse_args()
    root = pathlib.Path(args.root)
    if args.fix:
        check_state(root, True)
    problems = check_state(root, False) + check_design(root)
    for p in problems:
        print(p)
    if problems:
        sys.exit(
            f"{len(problems)} code reference(s) in docs/ no longer hold "
            "(tests/docs/check_refs.py --fix rewrites state.md's line numbers)"
        )
    print("docs/state.md and docs/design.md: every code reference holds")


if __name__ == "__main__":
    main()
