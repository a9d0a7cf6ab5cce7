"""How long is the course? Words and code lines per notebook, core path and "Going further" apart.

A notebook's core is everything outside its Going-further sections. A Going-further section
starts at a level-2 markdown heading whose text begins with "Going further" and runs to the next
level-2 heading. Counted: markdown words (whitespace-separated) and code lines that are neither
blank nor comments. Also read: the time each notebook's header states, as
"**Time:** core about N minutes; Going further about M minutes".

    python tools/course_stats.py          # the table, the budgets and the time totals
    python tools/course_stats.py --json   # the same numbers, for scripts
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
HALF_DAY = [f"{n:02d}" for n in range(0, 6)]  # the sampling half: 00-05
SECOND_HALF = [f"{n:02d}" for n in range(6, 11)]  # language models and speculative decoding: 06-10
EXTENSION = ["11", "12"]  # chapters after the two days: block verification, many requests at once
BUDGETS = {  # (words, code lines) for the core path of each group, (docs/authoring.md, "Budgets")
    "00-05": (HALF_DAY, 10_000, 900),
    "06-10": (SECOND_HALF, 12_000, 1_300),
    "11": (["11"], 3_000, 400),  # one chapter: about a quarter of the 06-10 budget
    "12": (["12"], 3_600, 500),  # one chapter that writes an engine: its module is most of its code
}
TIME = re.compile(r"\*\*Time:\*\*\s*core about (\d+) minutes(?:; Going further about (\d+) minutes)?", re.IGNORECASE)
HEADING = re.compile(r"^##\s+(?!#)(.*)$")  # a level-2 heading, not ### or deeper


def cell_source(cell: dict) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def markdown_words(source: str) -> int:
    return len(source.split())


def split_sections(cells: list[dict]) -> list[tuple[dict, bool]]:
    """Each cell with whether it lies in a Going-further section (a heading cell belongs to its own section).

    A markdown cell with several level-2 headings is attributed to the last one it opens; prose
    before the first heading of a cell belongs to the section that was open before it.
    """
    labelled, further = [], False
    for cell in cells:
        if cell["cell_type"] == "markdown":
            headings = [HEADING.match(line) for line in cell_source(cell).splitlines()]
            headings = [match.group(1).strip() for match in headings if match]
            if headings:
                further = headings[-1].lower().startswith("going further")
                first = headings[0].lower().startswith("going further")
                labelled.append((cell, first and further))
                continue
        labelled.append((cell, further))
    return labelled


def notebook_stats(path: Path) -> dict:
    """Words and code lines in the core and in Going-further sections, and the stated times."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    stats = {"core_words": 0, "core_lines": 0, "further_words": 0, "further_lines": 0}
    for cell, further in split_sections(cells):
        part = "further" if further else "core"
        if cell["cell_type"] == "markdown":
            stats[f"{part}_words"] += markdown_words(cell_source(cell))
        elif cell["cell_type"] == "code":
            stats[f"{part}_lines"] += code_lines(cell_source(cell))
    header = cell_source(cells[0]) if cells else ""
    match = TIME.search(header)
    stats["core_minutes"] = int(match.group(1)) if match else None
    stats["further_minutes"] = int(match.group(2)) if match and match.group(2) else 0
    return stats


def course_stats() -> dict[str, dict]:
    return {path.name[:2]: notebook_stats(path) for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))}


def totals(stats: dict[str, dict], numbers: list[str], key: str) -> int:
    return sum(stats[n][key] or 0 for n in numbers if n in stats)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    stats = course_stats()
    if args.json:
        print(json.dumps(stats, indent=1))
        return 0
    print(
        f"{'nb':>3} {'core words':>10} {'core lines':>10} {'further words':>13} {'further lines':>13} {'minutes':>14}"
    )
    for number, row in stats.items():
        minutes = f"{row['core_minutes']} + {row['further_minutes']}" if row["core_minutes"] else "not stated"
        print(
            f"{number:>3} {row['core_words']:>10,} {row['core_lines']:>10,} {row['further_words']:>13,}"
            f" {row['further_lines']:>13,} {minutes:>14}"
        )
    over = False
    for group, (numbers, max_words, max_lines) in BUDGETS.items():
        words, lines = totals(stats, numbers, "core_words"), totals(stats, numbers, "core_lines")
        ok = words <= max_words and lines <= max_lines
        over |= not ok
        print(
            f"{group} core: {words:,} words (budget {max_words:,}), {lines:,} code lines (budget {max_lines:,}):"
            f" {'within budget' if ok else 'OVER BUDGET'}"
        )
    half = totals(stats, HALF_DAY, "core_minutes")
    full = totals(stats, HALF_DAY + SECOND_HALF, "core_minutes")
    extended = totals(stats, HALF_DAY + SECOND_HALF + EXTENSION, "core_minutes")
    further = totals(stats, HALF_DAY + SECOND_HALF + EXTENSION, "further_minutes")
    print(
        f"core path of notebooks 00-05: {half} minutes; 00-10: {full} minutes; 00-12: {extended} minutes; "
        f"Going further in all: {further} minutes"
    )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
