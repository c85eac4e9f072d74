"""The operator's room: the ``memstream`` command (``cli.py``), the embedded stack it starts
and supervises (``stack/``), and the commands that read or re-drive the log — dead letters,
the audit stream and export, replay — and the demo. The top floor: it may import every other
package; none imports it."""
