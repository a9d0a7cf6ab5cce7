"""The README's figure is an output of notebook 09: write it from the committed notebook, or check that it is.

The figure is the exact law of the first two tokens of the text under each rule of notebook 09
(the cell whose plot is titled "Exact law of the first two emitted tokens"). After notebook 09 is
re-executed, run this to refresh docs/figures/exact_and_shortcuts.png:

    python tools/readme_figure.py           # write the PNG from the notebook's output
    python tools/readme_figure.py --check   # exit 1 if the committed PNG is not that output
"""

import argparse
import base64
import json
import sys
from pathlib import Path

from course_stats import cell_source  # tools/ is on the path when this runs as a script

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "09_exact_speculative_sampling.ipynb"
FIGURE = ROOT / "docs" / "figures" / "exact_and_shortcuts.png"
MARKER = "Exact law of the first two emitted tokens"


def notebook_figure() -> bytes:
    """The PNG the marked cell of notebook 09 printed."""
    for cell in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code" and MARKER in cell_source(cell):
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:
                    return base64.b64decode("".join(png) if isinstance(png, list) else png)
    raise SystemExit(f"{NOTEBOOK.name}: no cell with {MARKER!r} printed a PNG")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if they differ")
    args = parser.parse_args()
    png = notebook_figure()
    if args.check:
        same = FIGURE.exists() and FIGURE.read_bytes() == png
        print(
            f"{FIGURE.relative_to(ROOT)} is {NOTEBOOK.name}'s output"
            if same
            else f"{FIGURE.relative_to(ROOT)} differs from {NOTEBOOK.name}"
        )
        return 0 if same else 1
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    FIGURE.write_bytes(png)
    print(f"wrote {FIGURE.relative_to(ROOT)} ({len(png):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
