"""``memstream worker [--memory]``: run a Faust worker in the foreground until SIGINT/SIGTERM.

Without ``--memory``: ingestion (event log, episodes, buffers) and the audit relay. With it:
long-term memory (facts, graph, skills, summaries, maintenance), in its own consumer group.
"""

from __future__ import annotations

import logging

import faust
from mode import Service

from memstream.settings import Settings

log = logging.getLogger(__name__)


def run_worker(settings: Settings, *, memory: bool = False) -> None:
    app: faust.App
    resources: Service
    if memory:
        from streams.memory_app import build_memory_app

        memory_pipeline = build_memory_app(settings)
        app, resources = memory_pipeline.app, memory_pipeline.resources
    else:
        from streams.app import build_app

        pipeline = build_app(settings)
        app, resources = pipeline.app, pipeline.resources
    worker = faust.Worker(app, resources, loglevel=settings.log_level, redirect_stdouts=False, quiet=True)
    worker.spinner = None  # its terminal escapes would land in whatever reads our stdout
    worker.execute_from_commandline()
