"""The course keeps its promises: core budgets, times that add up, numbers that are true, no machine paths.

Budgets and the Going-further rule are those of docs/authoring.md (see tools/course_stats.py for how
words and lines are counted). Quoted numbers: every decimal number with three or more
significant digits, and every percentage, written in a notebook's markdown must appear in that
notebook's own outputs, so prose cannot drift from what the code computes.
"""

import json
import re
import sys
from pathlib import Path

import pytest
from helpers import markdown_cells

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_stats  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STATS = course_stats.course_stats()

# Figures quoted from published sources, not computed by the notebook (none with 3+ digits so far).
CITED: dict[str, set[str]] = {path.name[:2]: set() for path in NOTEBOOKS}


@pytest.mark.parametrize("group", list(course_stats.BUDGETS))
def test_the_core_path_fits_its_budget(group):
    numbers, max_words, max_lines = course_stats.BUDGETS[group]
    words = course_stats.totals(STATS, numbers, "core_words")
    lines = course_stats.totals(STATS, numbers, "core_lines")
    assert words <= max_words, f"{group}: {words} core words > {max_words}"
    assert lines <= max_lines, f"{group}: {lines} core code lines > {max_lines}"


@pytest.mark.parametrize("number", list(STATS))
def test_every_notebook_states_its_core_and_optional_time(number):
    assert STATS[number]["core_minutes"], f"notebook {number}: no '**Time:** core about N minutes; ...' line"


def quoted_totals() -> dict[str, int]:
    half = course_stats.totals(STATS, course_stats.HALF_DAY, "core_minutes")
    full = course_stats.totals(STATS, course_stats.HALF_DAY + course_stats.SECOND_HALF, "core_minutes")
    extended = course_stats.totals(
        STATS, course_stats.HALF_DAY + course_stats.SECOND_HALF + course_stats.EXTENSION, "core_minutes"
    )
    return {"00-05": half, "00-10": full, "00-12": extended}


@pytest.mark.parametrize(
    "where",
    ["README.md", "docs/instructors.md", "notebooks/00_welcome.ipynb"],
)
def test_the_quoted_course_times_are_the_sums_of_the_notebook_headers(where):
    path = ROOT / where
    text = "\n".join(markdown_cells(path)) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    totals = quoted_totals()
    for group, minutes in totals.items():
        phrase = f"core path of notebooks {group.replace('-', '–')}: about {minutes} minutes"
        assert phrase in text, f"{where} must say '{phrase}' (the sum of the notebooks' stated core times)"
    stated = re.findall(r"core path of notebooks (\d\d)–(\d\d): about (\d+) minutes", text)
    for first, last, minutes in stated:
        assert int(minutes) == totals[f"{first}-{last}"], f"{where}: {first}–{last} quoted as {minutes} minutes"


# The instructor guide's timetables: rows "| 0:25 | 08 Greedy speculative decoding | ... (50 min) |".
TIMETABLE_ROW = re.compile(r"^\|\s*(\d+):(\d\d)\s*\|\s*([^|]*)\|(.*)\((\d+) min\)[^|]*\|\s*$", re.MULTILINE)
# The guide's track headings, the longest each may run (minutes, breaks included), and the notebooks
# it must reach. A workshop track (3 hours, half day) demos some cells and keeps some exercises, so its
# rows are the instructor's plan; the two-day course runs every core as written, at its stated time.
TRACKS = {
    "Speculative decoding in 3 hours": (180, ["08", "09", "10"], False),
    "The sampling half day": (240, ["00", "01", "02", "03", "04", "05"], False),
    "Day 1": (480, course_stats.HALF_DAY, True),
    "Day 2": (480, course_stats.SECOND_HALF, True),
}


def guide_section(heading: str) -> str:
    text = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    match = re.search(rf"^##+ {re.escape(heading)}.*?$(.*?)(?=^##+ |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"docs/instructors.md has no section headed '{heading}'"
    return match.group(1)


@pytest.mark.parametrize("track", list(TRACKS))
def test_each_track_timetable_adds_up_and_fits_its_slot(track):
    limit, notebooks, as_written = TRACKS[track]
    rows = TIMETABLE_ROW.findall(guide_section(track))
    assert rows, f"'{track}': no timetable rows of the form '| 0:00 | NN title | what happens (M min) |'"
    clock = int(rows[0][0]) * 60 + int(rows[0][1])
    reached = []
    for hours, minutes, what, _, length in rows:
        start = int(hours) * 60 + int(minutes)
        assert start == clock, (
            f"'{track}': '{what.strip()}' starts at {hours}:{minutes}; the row above ends at minute {clock}"
        )
        number = re.match(r"(\d\d)\b", what.strip())
        if number and number.group(1) in STATS:
            reached.append(number.group(1))
            stated = STATS[number.group(1)]["core_minutes"]
            if as_written:
                assert int(length) == stated, (
                    f"'{track}': {number.group(1)} given {length} min, its header says {stated}"
                )
        clock = start + int(length)
    assert clock <= limit, f"'{track}' runs {clock} minutes, more than {limit}"
    assert sorted(set(reached)) == sorted(notebooks), f"'{track}' reaches notebooks {reached}, not {notebooks}"


def output_text(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            parts.append(text if isinstance(text, str) else "".join(text))
    return "\n".join(parts)


QUOTED = re.compile(r"(?<![\w.])(\d+\.\d+|\d+(?:\.\d+)?%)(?![\w.]*\d)")


def significant_digits(token: str) -> int:
    digits = token.rstrip("%").replace(".", "").lstrip("0")
    return len(digits)


def quoted_numbers(markdown: str) -> set[str]:
    markdown = re.sub(r"\$[^$]*\$", " ", markdown)  # formulas are not quoted results
    markdown = re.sub(r"`[^`]*`", " ", markdown)  # nor is code
    markdown = re.sub(r"(arXiv:)?\b\d{4}\.\d{4,5}\b", " ", markdown)  # nor an arXiv identifier (2302.01318)
    found = set()
    for token in QUOTED.findall(markdown):
        if token.endswith("%") or significant_digits(token) >= 3:
            found.add(token)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_numbers_quoted_in_prose_are_printed_by_the_notebook(path):
    outputs = output_text(path)
    missing = sorted(
        token
        for token in quoted_numbers("\n".join(markdown_cells(path))) - CITED[path.name[:2]]
        if token not in outputs
    )
    assert not missing, f"{path.name}: markdown quotes {missing}, which no output of the notebook prints"


# Rounded and approximate figures: a decimal with two significant digits ("α 0.72", "2.5 characters")
# or a number after "about" ("about 40", "about 15%") must be what a number printed by a nearby cell
# (or written in its code) rounds to, at the figure's own precision: "about 2.5" next to a printed
# 2.84 fails. Nearby: the NEARBY_BEFORE code cells above the prose and NEARBY_AFTER below it; a
# Summary may quote any cell of its notebook.
TWO_DIGITS = re.compile(r"(?<![\w.,])(\d+\.\d+(?: million)?)(?![\w.]*\d)")
APPROXIMATE = re.compile(
    r"(?i)(?:\babout|\baround|\broughly|\bnearly|\balmost|≈|~)\s*(\d+(?:,\d{3})*(?:\.\d+)?(?: million)?)(\s*%)?"
)
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?")
NOT_A_RESULT = [  # references and units that look like figures
    re.compile(r"(?i)\b(?:section|chapter|version|python|equation|table)s?\s+\d+(?:\.\d+)+"),
    re.compile(r"(?i)\d+(?:\.\d+)?\s*(?:minutes|hours|min)\b"),
]
NEARBY_BEFORE, NEARBY_AFTER = 4, 2
# Figures quoted from published sources, not computed by the notebook.
CITED_APPROXIMATE: dict[str, set[str]] = {path.name[:2]: set() for path in NOTEBOOKS} | {
    "06": {"0.6", "1.3"},  # Shannon's (1951) estimates of the entropy of English, in bits per character
    "07": {"2.5", "3.4", "312"},  # published speed-ups (Leviathan et al., Chen et al.); the A100's datasheet
}


def cell_numbers(cell: dict) -> list[float]:
    """Every number a code cell prints or writes in its source."""
    texts = [course_stats.cell_source(cell)]
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        text = output.get("text") or data.get("text/plain", "") or data.get("text/html", "")
        texts.append(text if isinstance(text, str) else "".join(text))
    return [float(token.replace(",", "")) for token in NUMBER.findall("\n".join(texts))]


def approximate_figures(markdown: str) -> set[str]:
    """Two-significant-digit decimals and numbers after "about" in prose (formulas, code and links removed)."""
    markdown = re.sub(r"\$[^$]*\$", " ", markdown)
    markdown = re.sub(r"`[^`]*`", " ", markdown)
    markdown = re.sub(r"\]\([^)]*\)", "]", markdown)  # link targets
    markdown = re.sub(r"(arXiv:)?\b\d{4}\.\d{4,5}\b", " ", markdown)
    for pattern in NOT_A_RESULT:
        markdown = pattern.sub(" ", markdown)
    found = {token for token in TWO_DIGITS.findall(markdown) if significant_digits(token.split()[0]) == 2}
    found |= {number + ("%" if percent else "") for number, percent in APPROXIMATE.findall(markdown)}
    return found


def rounds_to(figure: str, numbers: list[float]) -> bool:
    """Whether some number rounds to the figure at its precision (40 -> tens; 2.5 -> tenths; 15% -> 0.15 too)."""
    if figure.endswith(" million"):
        return rounds_to(figure.removesuffix(" million"), [x / 1e6 for x in numbers])
    digits = figure.rstrip("%").replace(",", "")
    value = float(digits)
    decimals = len(digits.split(".")[1]) if "." in digits else -(len(digits) - len(digits.rstrip("0")))
    if value == 0:
        decimals = max(decimals, 0)
    scales = (1.0, 100.0) if figure.endswith("%") else (1.0,)
    return any(abs(round(x * scale, decimals) - value) < 1e-9 for x in numbers for scale in scales)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name[:2])
def test_rounded_and_approximate_figures_match_what_nearby_cells_print(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = [i for i, cell in enumerate(cells) if cell["cell_type"] == "code"]
    everything = [x for i in code for x in cell_numbers(cells[i])]
    wrong = []
    for i, cell in enumerate(cells[1:], start=1):  # the header states times, not results
        if cell["cell_type"] != "markdown":
            continue
        source = course_stats.cell_source(cell)
        if source.lstrip().lower().startswith("## summary"):
            numbers = everything
        else:
            nearby = [j for j in code if j < i][-NEARBY_BEFORE:] + [j for j in code if j > i][:NEARBY_AFTER]
            numbers = [x for j in nearby for x in cell_numbers(cells[j])]
        for figure in sorted(approximate_figures(source) - CITED_APPROXIMATE[path.name[:2]]):
            if not rounds_to(figure, numbers):
                wrong.append(f"cell {i}: {figure!r} in {source[max(0, source.find(figure) - 50) :][:110]!r}")
    assert not wrong, f"{path.name}: figures no nearby cell prints or sets:\n" + "\n".join(wrong)


ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:root|home|Users|tmp|work|opt|usr/local|var/folders)/[\w.-]+")
APPENDICES = sorted((ROOT / "notebooks" / "appendices").glob("*.ipynb"))
SCANNED = [
    *NOTEBOOKS,
    *APPENDICES,
    *(ROOT / "docs").glob("*.md"),
    *(ROOT / "specdec" / "weights").glob("*.md"),
    ROOT / "README.md",
    ROOT / "benchmarks" / "README.md",
]


@pytest.mark.parametrize("path", SCANNED, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_absolute_path_of_any_machine_in_committed_text_or_outputs(path):
    text = path.read_text(encoding="utf-8")
    found = ABSOLUTE_PATH.findall(text)
    assert not found, f"{path.name} contains machine paths: {found[:3]}"


LAB_LOG = re.compile(
    r"(?i:this course was written|the course was written|reference machine|machine this course|cores kept busy"
    r"|a second run the same day)|ERRATA #\d+(?!\d*\]\()"
)


@pytest.mark.parametrize("path", NOTEBOOKS + APPENDICES, ids=lambda path: path.name[:2])
def test_notebooks_speak_about_the_subject_not_about_how_they_were_made(path):
    found = LAB_LOG.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name}: {sorted(set(found))}"
