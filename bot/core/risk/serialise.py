"""A risk report as JSON (`perfbot score --format json`), derived from the model in `report`.

Each field of a report, file or signal is written in the order of the dataclass, under its own
name and as its value (tuples as lists, files and signals as their own JSON), unless its metadata
(`json_as`) says otherwise: other keys, signals as their sentences, or nothing at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# How a field's value is written: as it is, or (signals) as their sentences.
Form = Literal["value", "sentences"]
_KEY = "json"


def json_as(*keys: tuple[str, Form]) -> Mapping[str, Any]:
    """Field metadata: write the field under each of ``keys``, in its form; no keys: leave it out."""
    return {_KEY: keys}


def to_json(item: DataclassInstance, **extra: object) -> dict[str, Any]:
    """``item``'s fields as JSON, then ``extra`` (values computed from the whole item)."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        for key, form in f.metadata.get(_KEY, ((f.name, "value"),)):
            found[key] = [s.sentence() for s in value] if form == "sentences" else _value(value)
    return found | extra


def _value(value: object) -> object:
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    to_dict = getattr(value, "to_dict", None)  # a file or signal of the report: its own JSON
    return to_dict() if to_dict is not None else value
