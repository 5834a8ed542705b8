"""An mkdocs hook: the metalcall.numpy reference (docs/api/numpy.md) from the live module.

Most of metalcall.numpy's elementwise functions are made from one table when the module is
imported, so a static reader of the source cannot see them; this imports the module and writes
each public name's signature and docstring where the page says <!-- numpy-api -->.
"""

from __future__ import annotations

import html
import inspect
import logging

MARKER = "<!-- numpy-api -->"


class _GeneratedNamesInAll(logging.Filter):
    """The metalcall page's static reader (griffe) reports `*_FUNCTIONS, *_ALIASES` in
    metalcall.numpy's __all__ as unsupported items: they are the generated names this hook
    documents from the live module, so that report is dropped (and only that one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Unsupported item in metalcall.numpy.__all__" not in record.getMessage()


for _name in ("griffe", "mkdocs.plugins.griffe", "mkdocs.plugins.mkdocstrings_handlers"):
    logging.getLogger(_name).addFilter(_GeneratedNamesInAll())


def _entry(name: str, obj: object) -> str:
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "constant"
    try:
        signature = str(inspect.signature(obj)) if kind != "constant" else f" = {obj!r}"
    except (TypeError, ValueError):
        signature = "(...)"
    doc = inspect.getdoc(obj) if kind != "constant" else None
    # Docstrings are plain text here: shown as written, not read as Markdown.
    body = f"<pre class=\"numpy-api-doc\">{html.escape(doc)}</pre>\n" if doc else ""
    return f"### `{name}`\n\n*{kind}* `{name}{signature}`\n\n{body}"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - mkdocs' hook signature
    if MARKER not in markdown:
        return markdown
    import metalcall.numpy as mnp

    names = sorted(mnp.__all__, key=str.lower)
    groups = {"Classes": [], "Functions": [], "Constants and data types": []}
    for name in names:
        obj = getattr(mnp, name)
        group = "Classes" if inspect.isclass(obj) and not name[0].islower() else \
            "Functions" if callable(obj) and not inspect.isclass(obj) else "Constants and data types"
        groups[group].append(_entry(name, obj))
    text = "".join(f"## {title}\n\n" + "\n".join(entries) for title, entries in groups.items() if entries)
    return markdown.replace(MARKER, text)
