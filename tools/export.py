"""Write the `specdec` teaching modules from the notebooks' export cells, or check they agree.

A notebook names its module in a cell whose first line is `#| default_exp <module>`; every
code cell whose first line is `#| export` is copied, in order and without that line, into
specdec/<module>.py under a generated header. `#| export <other>` sends a cell to
specdec/<other>.py instead, for a notebook that writes more than one module. Run from anywhere:

    python tools/export.py           # rewrite the modules
    python tools/export.py --check   # print a diff and exit 1 if a module and its notebook disagree
"""

import argparse
import difflib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = ROOT / "specdec"
HEADER = "# Generated from {source} by tools/export.py: edit the notebook, not this file.\n"
# A directive is a comment line starting with `#|`, spaced any way nbdev accepts it: `#| export`,
# `#|export`, `# | export`, `#|  export  gpt`. Only `default_exp` and `export` mean something here.
DIRECTIVE = re.compile(r"^\s*#\s*\|\s*(\S+)(.*)$")
KNOWN = {"default_exp", "export"}


def directive(line: str) -> tuple[str, list[str]] | None:
    """(name, arguments) if the line is a `#|` directive, else None."""
    match = DIRECTIVE.match(line)
    return (match.group(1), match.group(2).split()) if match else None


def cell_directive(source: str, where: str) -> tuple[str, list[str], str] | None:
    """The cell's directive (name, arguments, the rest of the cell), or None; unknown or misplaced ones stop the export.

    A directive must be the cell's first line. An unknown name (`#| exprot`), a known one with the
    wrong number of arguments, or a directive further down the cell's leading comments is an
    error: silently skipping a cell would leave the package without code the notebook shows.
    """
    lines = source.split("\n")
    leading = []  # the comment lines the cell starts with
    for line in lines:
        if not line.lstrip().startswith("#"):
            break
        leading.append(line)
    found = [(i, directive(line)) for i, line in enumerate(leading) if directive(line)]
    if not found:
        return None
    (index, (name, args)), *others = found
    if index != 0 or others:
        sys.exit(f"{where}: a '#|' directive must be the first line of its cell, and the only one: {source[:80]!r}")
    if name not in KNOWN:
        sys.exit(f"{where}: unknown directive '#| {name}' (known: {', '.join(sorted(KNOWN))})")
    if (name == "default_exp" and len(args) != 1) or (name == "export" and len(args) > 1):
        wanted = "one module name" if name == "default_exp" else "at most one module name"
        sys.exit(f"{where}: '#| {name}' takes {wanted}, got {args}")
    return name, args, "\n".join(lines[1:])


def exported_modules() -> dict[Path, str]:
    """Map each module path to the text the notebooks say it should have."""
    modules: dict[Path, str] = {}
    for notebook_path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(notebook_path, as_version=4)
        default, chunks = None, {}  # module name -> list of cell sources, in notebook order
        for number, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            found = cell_directive(cell.source, f"{notebook_path.name}, cell {number}")
            if found is None:
                continue
            name, args, rest = found
            if name == "default_exp":
                default = args[0]
            else:
                module = args[0] if args else default
                if module is None:
                    sys.exit(f"{notebook_path.name}: an '#| export' cell comes before any '#| default_exp <module>'")
                chunks.setdefault(module, []).append(rest.strip("\n"))
        source = notebook_path.relative_to(ROOT).as_posix()
        for module, cells in chunks.items():
            target = PACKAGE / f"{module}.py"
            if target in modules:
                sys.exit(f"{notebook_path.name}: module {module} is already exported by another notebook")
            modules[target] = HEADER.format(source=source) + "\n\n\n".join(cells) + "\n"
    return modules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    args = parser.parse_args()
    expected = exported_modules()
    # A generated module whose notebook no longer exports it is stale too.
    stale = [p for p in PACKAGE.glob("*.py") if p not in expected and p.read_text().startswith("# Generated from ")]
    drift = 0
    for path, text in expected.items():
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        drift += 1
        if args.check:
            name = path.relative_to(ROOT).as_posix()
            diff = difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), f"{name} (package)", f"{name} (from notebooks)"
            )
            sys.stdout.writelines(diff)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    for path in stale:
        drift += 1
        print(f"{path.relative_to(ROOT)} is generated but no notebook exports it any more")
        if not args.check:
            path.unlink()
    if args.check:
        print(f"export check: {len(expected)} modules, {drift} out of date" if drift else "export check: clean")
        return 1 if drift else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
