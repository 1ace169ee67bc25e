"""Reading the report page back: its tables by id, each row its cells' text, with the
standard library's HTML parser (not the code under test)."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["Page", "parse"]

_VOID = frozenset({"meta", "br", "img", "link", "input", "hr", "col", "wbr", "source"})


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.ids: set[str] = set()
        self.texts: dict[str, str] = {}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._open: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        ident = found.get("id")
        if ident:
            self.ids.add(ident)
        if tag not in _VOID:
            self._open.append((tag, ident))
        if tag == "table" and ident:
            self._table = ident
            self.tables[ident] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, ident = self._open.pop()
            if ident and ident not in self.texts:
                self.texts[ident] = ""
            if name == tag:
                break
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        for _, ident in self._open:
            if ident:
                self.texts[ident] = self.texts.get(ident, "") + data

    def rows(self, table: str) -> list[list[str]]:
        """The body rows of ``table`` (its header row, the one of ``<th scope=col>``s,
        left out when it has one)."""
        found = self.tables[table]
        return found[1:] if found and self._has_header(table) else found

    def _has_header(self, table: str) -> bool:
        inside = False
        for tag, attrs in self.tags:
            if tag == "table":
                inside = attrs.get("id") == table
            elif inside and tag == "th":
                return attrs.get("scope") == "col"
        return False

    def pairs(self, table: str) -> dict[str, str]:
        """A two-column table (a heading and a value per row) as a mapping."""
        return {row[0]: row[1] for row in self.tables[table]}

    def words(self, ident: str) -> str:
        return " ".join(self.texts.get(ident, "").split())


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page
