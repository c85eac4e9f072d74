"""Fact extraction: turning conversation turns into scoped, versionable facts."""
