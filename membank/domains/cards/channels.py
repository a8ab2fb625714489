"""The channels of character cards and lorebooks (docs/import-export.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from ...kernel.payload import Id, Most
from ..contract import Channel, Lazy

FilePath = Annotated[str, Most(chars=4096)]  # a file anywhere on this machine (relative: to the project folder)


@dataclass(frozen=True)
class CardImport:
    paths: Annotated[list[FilePath], Most(items=100)]
    update: bool = False  # merge a new version of a card imported before into its files
    projectId: Id | None = None


@dataclass(frozen=True)
class CardExport:
    source: Annotated[str, Most(chars=1024)]  # characters/….md or a book folder world/…
    format: Literal["json", "png", "charx"]
    output: FilePath
    spec: Literal["v1", "v2", "v3"] | None = None  # default: the one it was imported as (V3 for a card of your own)
    force: bool = False  # replace an existing output file
    projectId: Id | None = None


class FieldChange(TypedDict):
    field: str  # a front-matter key (`card.data.first_mes` inside one), or `body`
    change: Literal["changed", "kept"]  # kept: both the writer and the card changed it; the writer's stays
    mine: NotRequired[Any]  # kept: the writer's value (null: the writer removed it)
    theirs: NotRequired[Any]  # kept: the new card's value


class Change(TypedDict):
    source: str  # .writenow/…
    change: Literal["new", "changed", "same", "kept"]  # against the last imported original (a merge)
    fields: NotRequired[list[FieldChange]]  # at most 200, in order: the `kept` ones chosen first
    fieldsTotal: NotRequired[int]  # when more than 200: how many there are


class BookReport(TypedDict):
    target: str  # the book folder
    name: str
    scope: Literal["character", "project"]  # character: only in a prompt where its character is activated
    entries: int
    alwaysOn: int  # entries with `include: always` (constant)
    alwaysOnTokens: int  # what they add to each prompt the book takes part in


class Skipped(TypedDict):
    name: str  # the file's name inside the input (a CHARX entry)
    reason: str  # why an import never writes it: a name starting with `.`, a program


class Imported(TypedDict):
    file: str  # the input's base name
    kind: Literal["card", "lorebook"]
    format: str  # e.g. "png, Character Card V3"
    target: str  # the character file or the book folder
    status: Literal["created", "unchanged", "pending", "updated"]  # pending: would change; import with update
    changes: list[Change]  # at most 200, in order: chosen among those that write or keep something first
    changesTotal: NotRequired[int]  # when more than 200: how many there are
    skipped: list[Skipped]  # files of the input never written (dot names, programs), listed here (at most 200)
    skippedTotal: NotRequired[int]  # when more than 200
    books: list[BookReport]  # the card's own book, or the lorebook
    warnings: list[str]  # e.g. the card's name is already another card's alias, another book with the same name


class ImportOut(TypedDict):
    items: list[Imported]


class ExportOut(TypedDict):
    source: str
    kind: Literal["card", "lorebook"]
    format: str
    spec: str  # v1, v2, v3, lorebook_v3, sillytavern
    output: str  # the output's base name
    bytes: int


CHANNELS = (
    Channel("card:import", CardImport, ImportOut, Lazy("membank.domains.cards.flows", "import_cards"), "write",
            "import", "Import character cards and lorebooks (JSON, PNG/APNG, CHARX, lorebook_v3, SillyTavern World "
            "Info) into characters/ and world/; a card imported before is only compared unless update.",
            "import_cards"),
    Channel("card:export", CardExport, ExportOut, Lazy("membank.domains.cards.export", "export_card"), "read",
            "export", "Export a character (with its lorebook) or a lorebook folder as JSON, PNG or CHARX, with the "
            "writer's edits.", "export_card"),
)
