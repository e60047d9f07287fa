#!/usr/bin/env python3
"""Benchmark results as dated records plus a page of current figures.

Every benchmark script ends its run with `record(key, section)`. The section is the
script's markdown report, whose first line is its heading, `## Title (YYYY-MM-DD)`.
`record` then

- writes the section to `records/<date>-<slug of key>.md` beside the results file (its
  headings one level up, so the title is the page's `#`). A record is never overwritten:
  a second run of the same key on the same date becomes `<date>-<slug>-2.md`, and so on;
- replaces the block `<!-- begin KEY -->` ... `<!-- end KEY -->` of the results file
  (bench/RESULTS.md, or the file named by the script's `--out`) with a summary of the
  section and links to the new record and to the earlier ones of the same question. When
  the file has no such block, a `## Title` heading and the block are appended.

The summary is the section's machine line, its first table (or the first table under a
given `###` heading) and its bold lines (the bars), copied as they are; a script may pass
a summary of its own.

A measurement made without a script (a cargo bench, a one-off command) is recorded with
the command line: write the section to a file and run

    python3 bench/record.py KEY FILE.md [--results bench/RESULTS.md] [--date YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"

INTRO = (
    "# wireload benchmarks\n\n"
    "The current figure for each question, from the newest record of it. The records, one dated\n"
    "file per run in `records/`, are written by the benchmark scripts themselves (`bench/record.py`).\n"
)

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
LINK = re.compile(r"\]\(records/([^)]+\.md)\)")


def slug(key: str) -> str:
    """File-name form of a section key: `load sf=1 tables=all` -> `load-sf1-tables-all`."""
    s = re.sub(r"(\w)=(?=\d)", r"\1", key.lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")


def heading(section: str) -> tuple[str, str | None]:
    """The section's title (without its date) and the date in its heading, if any."""
    first = section.lstrip("\n").split("\n", 1)[0]
    title = first.lstrip("#").strip()
    dates = DATE.findall(title)
    date = dates[-1] if dates else None
    if date:
        # "Title (2026-11-21)" -> "Title"; "Title (2 threads, 2026-11-21)" -> "Title (2 threads)"
        title = re.sub(r"\s*\(" + date + r"\)\s*$", "", title)
        title = re.sub(r",\s*" + date + r"\)\s*$", ")", title)
    return title, date


def promote(section: str) -> str:
    """Headings one level up (outside code fences): `## T` -> `# T`, `### S` -> `## S`."""
    out, fenced = [], False
    for line in section.strip("\n").split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"##+ ", line):
            line = line[1:]
        out.append(line)
    return "\n".join(out) + "\n"


def _tables(lines: list[str], start: int = 0) -> list[str]:
    """The first markdown table at or after line `start`."""
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    j = i
    while j < len(lines) and lines[j].startswith("|"):
        j += 1
    return lines[i:j]


def summary(
    section: str, under: str | None = None, rows: tuple[str, ...] = (), also: tuple[str, ...] = ()
) -> str:
    """Machine line, first table (under the `###` heading starting with `under`), bold lines.

    `rows`: keep only the table's rows whose first cell starts with one of these (and its
    header); `also`: add the lines that start with one of these."""
    lines = section.strip("\n").split("\n")
    out = [ln for ln in lines if re.match(r"-? ?Machine:", ln)][:1]
    start = 0
    if under is not None:
        for k, ln in enumerate(lines):
            if ln.startswith("#") and ln.lstrip("#").strip().startswith(under):
                start = k
                out += ["", ln.lstrip("#").strip()] if out else [ln.lstrip("#").strip()]
                break
    table = _tables(lines, start)
    if rows:
        table = table[:2] + [r for r in table[2:] if r.strip("| ").startswith(rows)]
    if table:
        out += [""] if out else []
        out += table
    bold = [
        ln
        for ln in lines
        if ("**" in ln and not ln.startswith(("|", "#"))) or (also and ln.startswith(also))
    ]
    if bold:
        out += [""] + bold
    return "\n".join(out).strip("\n") + "\n"


def _next_free(records: Path, date: str, name: str) -> Path:
    path = records / f"{date}-{name}.md"
    n = 2
    while path.exists():
        path = records / f"{date}-{name}-{n}.md"
        n += 1
    return path


def _links(names: list[str], name: str) -> str:
    def label(n: str) -> str:
        again = re.fullmatch(rf"\d{{4}}-\d{{2}}-\d{{2}}-{re.escape(name)}-(\d+)\.md", n)
        return n[:10] + (f" #{again.group(1)}" if again else "")

    return ", ".join(f"[{label(n)}](records/{n})" for n in names)


def block(key: str, body: str, record_name: str, earlier: list[str]) -> str:
    text = f"<!-- begin {key} -->\n{body.strip(chr(10))}\n\nRecord: [{record_name}](records/{record_name})"
    if earlier:
        text += f"; earlier: {_links(earlier, slug(key))}"
    return text + f".\n<!-- end {key} -->\n"


def record(
    key: str,
    section: str,
    *,
    results: Path | str | None = None,
    summary_text: str | None = None,
    date: str | None = None,
) -> Path:
    """Write `section` as a new dated record and put its summary into the results file.

    Returns the record's path. `results` defaults to bench/RESULTS.md; records go to the
    `records/` folder beside it."""
    results = Path(results) if results is not None else RESULTS
    title, heading_date = heading(section)
    date = date or heading_date or dt.date.today().isoformat()
    records = results.parent / "records"
    records.mkdir(parents=True, exist_ok=True)
    path = _next_free(records, date, slug(key))
    path.write_text(promote(section))

    text = results.read_text() if results.exists() else INTRO
    begin, end = f"<!-- begin {key} -->", f"<!-- end {key} -->"
    i, j = text.find(begin), text.find(end)
    old = text[i:j] if i >= 0 and j > i else ""
    pattern = re.compile(rf"^\d{{4}}-\d{{2}}-\d{{2}}-{re.escape(slug(key))}(-\d+)?\.md$")
    earlier = {p.name for p in records.glob("*.md") if pattern.match(p.name)}
    earlier |= set(LINK.findall(old))
    earlier.discard(path.name)
    earlier_sorted = sorted(earlier, reverse=True)
    new = block(key, summary_text or summary(section), path.name, earlier_sorted)
    if old:
        rest = text[j + len(end) :].lstrip("\n")
        text = text[:i] + new + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + f"\n\n## {title}\n\n" + new
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(text)
    return path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("key", help="the question's key: its block in the results file, its records' file names")
    p.add_argument("section", type=Path, help="markdown file whose first line is `## Title (YYYY-MM-DD)`")
    p.add_argument("--results", type=Path, default=RESULTS, help="results file [bench/RESULTS.md]")
    p.add_argument("--date", help="the record's date [the heading's, else today]")
    p.add_argument("--under", help="summarize the first table under the ### heading starting with this")
    args = p.parse_args(argv)
    section = args.section.read_text()
    text = summary(section, args.under) if args.under else None
    path = record(args.key, section, results=args.results, summary_text=text, date=args.date)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
