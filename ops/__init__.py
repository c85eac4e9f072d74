"""The operator's room: the ``memstream`` command (``cli.py``), the embedded stack it starts
and supervises (``stack/``), and the commands that read or re-drive the log — dead letters,
the audit stream and export, replay — and the demo. The top floor: it may import every other
package; none imports it."""

import os

# One BLAS thread per process, set before numpy loads. The gateway and workers are asyncio
# processes doing small matrix products (MMR over ~100 candidates, embedding a query); BLAS
# threads spinning for those took two thirds of the gateway's CPU under 16 concurrent searches
# (docs/benchmarks.md). An operator's own setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
