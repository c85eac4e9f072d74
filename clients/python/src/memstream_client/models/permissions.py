"""The tool-permission engine (gateway schemas ``EvaluateIn``, ``EvaluateOut``, ``AllowOnceIn``,
``AllowOnceOut``, ``RuleIn``, ``RuleOut``, ``RulesOut``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from memstream_client.models.base import Model
from memstream_client.types import Effect


class PermissionRequest(Model):
    """May ``tool`` run ``command`` in this session (and project)?"""

    session_id: str
    project_id: str | None = None
    #: The agent the evaluation acts for: it may use that agent's allow-once grants.
    agent_id: str | None = None
    tool: str
    command: str


class AllowOnceRequest(PermissionRequest):
    """A grant for exactly this session, project (or none), tool and command; with
    ``agent_id``, used only by evaluations acting for that agent."""


class Evaluation(Model):
    #: ``ALLOW``, ``BLOCK`` or ``PENDING`` (ask a person).
    decision: str
    #: ``preapproved``, ``allow_once``, ``project``, ``global``, ``none`` or ``budget_exceeded``.
    tier: str
    reason: str
    rule_id: uuid.UUID | None = None
    grant_id: uuid.UUID | None = None


class Grant(Model):
    grant_id: uuid.UUID
    expires_in_s: int


class RuleRequest(Model):
    #: None for a global rule.
    project_id: str | None = None
    tool: str
    effect: Effect
    #: RE2 syntax, searched in the command.
    pattern: str
    position: int = 0
    description: str = ""


class Rule(Model):
    rule_id: uuid.UUID
    project_id: str | None
    tool: str
    #: ``ALLOW`` or ``BLOCK``.
    effect: str
    pattern: str
    position: int
    description: str
    created_at: datetime


class Rules(Model):
    rules: list[Rule]
