"""The base of every model of the repository config: an unknown key is a mistake, and a loaded
config never changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
