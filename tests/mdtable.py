"""Read the Markdown tables of a generated report back, so that tests can check table values
against the raw records they were computed from."""

from __future__ import annotations


def tables_after(text: str, heading: str) -> list[list[dict[str, str]]]:
    """The tables (each a list of ``{column header: cell}``) in the section whose heading line
    starts with ``heading`` (``#`` marks excluded), up to the next heading of any level.

    >>> md = "# T\\n\\n## Part A\\n\\n| x | y |\\n|---|---|\\n| 1 | 2 |\\n| 3 | 4 |\\n\\n## B\\n| x |\\n|---|\\n| 9 |\\n"
    >>> tables_after(md, "Part A")
    [[{'x': '1', 'y': '2'}, {'x': '3', 'y': '4'}]]
    """
    lines = text.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("#") and line.lstrip("#").strip().startswith(heading)
    )
    tables: list[list[dict[str, str]]] = []
    header: list[str] | None = None
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            tables.append([])
        elif not all(set(c) <= set("-: ") for c in cells):
            tables[-1].append(dict(zip(header, cells)))
    return tables


def row(table: list[dict[str, str]], **match: str) -> dict[str, str]:
    """The one row whose cells equal ``match`` (column names with spaces: pass a dict with ``**``).

    >>> row([{"a": "1", "b": "x"}, {"a": "2", "b": "y"}], a="2")["b"]
    'y'
    """
    found = [r for r in table if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, table)
    return found[0]


def printed(cell: str, value: float) -> bool:
    """Whether ``cell`` is ``value`` rounded to the digits the cell shows (``"1.5e-03"``: 2 significant digits).

    >>> printed("3.142", 3.14159), printed("3.141", 3.14159), printed("1.2e-03", 0.00123)
    (True, False, True)
    """
    mantissa, _, exponent = cell.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    unit = 10.0 ** (-decimals + (int(exponent) if exponent else 0))
    return abs(float(cell) - value) <= 0.5 * unit * (1 + 1e-9)
