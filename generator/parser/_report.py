"""The state one document's parse shares between its parts: the lines and the diagnostics."""

from __future__ import annotations

from generator.models import Diagnostic, Loc, Severity


class Report:
    """One document's lines (1-based access through `line`) and the diagnostics found so far."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.text = text
        self.lines = [line.rstrip("\r") for line in text.split("\n")]
        if len(self.lines) > 1 and self.lines[-1] == "":
            self.lines.pop()  # the text ends with a newline: no extra line
        self.diagnostics: list[Diagnostic] = []

    @property
    def last_line(self) -> int:
        return max(len(self.lines), 1)

    def loc(self, line: int, col: int = 1) -> Loc:
        return Loc(path=self.rel, line=line, col=col)

    def error(
        self, code: str, line: int, message: str, col: int = 1, severity: Severity = "error"
    ) -> None:
        self.diagnostics.append(
            Diagnostic(loc=self.loc(line, col), code=code, message=message, severity=severity)
        )
