"""Errors the library raises. Each one says what was wrong and how to fix it."""

from __future__ import annotations


class RecsysError(Exception):
    """Base class: anything the command line turns into a clean message and a non-zero exit."""


class DataError(RecsysError):
    """A problem in an input file, located by file, row (1-based, header is row 1) and column."""

    def __init__(self, file: str, message: str, row: int | None = None, column: str | None = None):
        self.file, self.row, self.column, self.detail = str(file), row, column, message
        where = self.file
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", column '{column}'"
        super().__init__(f"{where}: {message}")


class NotFittedError(RecsysError):
    """A model or baseline was used before `fit`."""


class UnknownItemError(RecsysError, KeyError):
    """An item_id that is not in the catalogue."""

    def __init__(self, item_id: str):
        self.item_id = item_id
        super().__init__(f"unknown item_id {item_id!r}: it is not in the catalogue of this model")

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return self.args[0]


class ArtifactError(RecsysError):
    """A model folder that is missing, incomplete, corrupt or of another format version.

    `str(exc)` names the folder by its full path and the file (for the command line);
    `exc.public` only by the version's name and the file (what the HTTP API may show).
    """

    def __init__(self, problem: str, folder=None, file: str | None = None):
        self.problem, self.folder, self.file = problem, folder, file
        super().__init__(self._where(str(folder) if folder is not None else None))

    @property
    def public(self) -> str:
        from pathlib import Path

        return self._where(Path(self.folder).name if self.folder is not None else None)

    def _where(self, folder: str | None) -> str:
        where = "/".join(p for p in (folder, self.file) if p)
        return f"{where}: {self.problem}" if where else self.problem
