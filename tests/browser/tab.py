"""A page of the memory explorer, with what it did (dialogs, console, errors, requests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Page, Request


@dataclass
class Tab:
    """A page of the explorer and everything it did."""

    page: Page
    base_url: str
    dialogs: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    async def open(self) -> None:
        await self.page.goto(f"{self.base_url}/ui")

    async def sign_in(self, key: str) -> None:
        await self.open()
        await self.page.get_by_label("API key", exact=True).fill(key)
        await self.page.get_by_role("button", name="Sign in").click()

    async def choose_user(self, user: str) -> None:
        box = self.page.get_by_role("combobox", name="User")
        await box.fill(user[:-1])  # a part of the id: the list is searched as one types
        await self.page.get_by_role("option", name=user).click()

    async def show(self, view: str) -> None:
        await self.page.get_by_role("tab", name=view, exact=True).click()

    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind == "error"]
