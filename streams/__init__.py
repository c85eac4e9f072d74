"""The Faust app: settings, topics declared once, one agent per file, pure helpers."""
