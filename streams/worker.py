"""``memstream worker``: run the Faust worker in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import logging

import faust

from memstream.settings import Settings
from streams.app import build_app

log = logging.getLogger(__name__)


def run_worker(settings: Settings) -> None:
    pipeline = build_app(settings)
    worker = faust.Worker(
        pipeline.app,
        pipeline.resources,
        loglevel=settings.log_level,
        redirect_stdouts=False,
        quiet=True,
    )
    worker.spinner = None  # its terminal escapes would land in whatever reads our stdout
    worker.execute_from_commandline()
