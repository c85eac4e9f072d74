"""The base of every model: fields the gateway sends that this version does not know are kept
(``extra="allow"``), so that a newer gateway never breaks an older client."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """The JSON body of a request: the fields that were set (given, or filled in by the SDK),
        so that the gateway's own defaults apply to the rest."""
        return self.model_dump(mode="json", exclude_unset=True)
