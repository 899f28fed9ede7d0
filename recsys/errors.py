"""Errors the library raises, by kind. Each one says what was wrong and how to fix it.

The kind decides who is told what: an `InputError` is the caller's input (a file, a request, an
option) and its message is for the person who sent it (the HTTP API answers 4xx with it, the
command line prints it); an `ArtifactError` is a broken model version on disk (409 when a client
asks to serve it). Anything else, a `RecsysError` that is not one of these or an exception of
another class (a ValueError from numpy, ...), is a bug: a 500 with a request id in the API, its
traceback in the log.
"""

from __future__ import annotations

from pathlib import Path


class RecsysError(Exception):
    """Base class: anything the command line turns into a clean message and a non-zero exit."""


class InputError(RecsysError):
    """Input the caller sent that cannot be used: an unknown filter key or head, an option out of
    range, a schema entry, a file's content. Never a bug of the library."""


class DataError(InputError):
    """A problem in an input file, located by file, row (1-based, header is row 1) and column."""

    def __init__(self, file: str, message: str, row: int | None = None, column: str | None = None):
        self.file, self.row, self.column, self.detail = str(file), row, column, message
        where = self.file
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", column '{column}'"
        super().__init__(f"{where}: {message}")


class UnknownItemError(InputError):
    """An item_id that is not in the catalogue."""

    def __init__(self, item_id: str):
        self.item_id = item_id
        super().__init__(f"unknown item_id {item_id!r}: it is not in the catalogue of this model")


class NotFittedError(RecsysError):
    """A model or baseline was used before `fit`: the calling code's mistake, not input."""


class MissingExtraError(RecsysError):
    """A command needs an optional dependency that is not installed; the message names the
    `pip install` that brings it."""


class ArtifactError(RecsysError):
    """A model folder that is missing, incomplete, corrupt or of another format version.

    `str(exc)` names the folder by its full path and the file (for the command line);
    `exc.public` only by the version's name and the file (what the HTTP API may show).
    """

    def __init__(self, problem: str, folder: str | Path | None = None,
                 file: str | None = None):
        self.problem, self.folder, self.file = problem, folder, file
        super().__init__(self._where(str(folder) if folder is not None else None))

    @property
    def public(self) -> str:
        return self._where(Path(self.folder).name if self.folder is not None else None)

    def _where(self, folder: str | None) -> str:
        where = "/".join(p for p in (folder, self.file) if p)
        return f"{where}: {self.problem}" if where else self.problem
