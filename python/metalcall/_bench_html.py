"""--html PATH of `python -m metalcall bench`: one self-contained page of a run — the machine,
the command, every table and (for the standard suite) the plot inline as a PNG data URI, so
the file can be mailed or attached to an issue as it is. Needs matplotlib for the plot.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from metalcall._bench import Table

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #1d1f24; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #d8dbe2; padding: .3em .8em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #eef0f5; }
code { background: #eef0f5; padding: .1em .3em; border-radius: 3px; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1.2em; }
dt { font-weight: 600; }
img { max-width: 100%; border: 1px solid #d8dbe2; }
.ok { color: #17692d; font-weight: 600; }
"""


def table_html(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in t.rows)
    return f"<h2>{html.escape(t.title)}</h2>\n<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>\n"


def write_html(report: dict[str, Any], tables: list[Table], plot_png: bytes | None, path: str) -> None:
    machine = report["machine"]
    facts = {
        "created": report["created"],
        "command": " ".join(report["command"]),
        "CPU": f"{machine['cpu']} ({machine['cpu_count']} logical cores)",
        "platform": machine["platform"],
        "versions": f"metalcall {machine['metalcall']}, NumPy {machine['numpy']}, Python {machine['python']}",
        "devices": ", ".join(f"{e['device']['name']} ({e['device']['backend']})" for e in report["devices"]),
    }
    facts_html = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in facts.items())
    plot = ""
    if plot_png is not None:
        uri = "data:image/png;base64," + base64.b64encode(plot_png).decode("ascii")
        plot = f'<h2>Bandwidth and latency</h2>\n<img alt="bandwidth against size and dispatch latency" src="{uri}">\n'
    checked = ('<p class="ok">Every kernel\'s and peer\'s result was checked against NumPy.</p>'
               if report.get("checked") else "")
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>metalcall bench — {html.escape(machine['cpu'])}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>metalcall bench</h1>\n<dl>{facts_html}</dl>\n{checked}\n{plot}"
            + "".join(table_html(t) for t in tables) + "</body></html>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
