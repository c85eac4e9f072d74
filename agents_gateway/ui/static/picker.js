// Whose memory: a user (search as you type over GET /v1/users), and optionally a project and a
// session. An admin with a tenant-level key may also erase the user from here.

import { explain, segment } from "./api.js";
import { clear, h, list, number, shown, timeNode } from "./dom.js";

const SEARCH_DELAY_MS = 200;
const PAGE = 20;

export function createUserPicker(ctx) {
  const listbox = h("ul", { role: "listbox", id: "user-options", class: "options", hidden: true, "aria-label": "Users" });
  const input = h("input", {
    type: "search",
    id: "user-input",
    role: "combobox",
    "aria-autocomplete": "list",
    "aria-expanded": "false",
    "aria-controls": "user-options",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "Type part of a user id",
  });
  const status = h("p", { class: "picker-status", id: "user-status", role: "status" });
  const projects = h("datalist", { id: "project-options" });
  const sessions = h("datalist", { id: "session-options" });
  const project = h("input", { type: "text", id: "project-input", list: "project-options", autocomplete: "off", spellcheck: "false", placeholder: "any" });
  const session = h("input", { type: "text", id: "session-input", list: "session-options", autocomplete: "off", spellcheck: "false", placeholder: "any" });
  const current = h("p", { class: "picker-current", id: "current-user" });
  const erase = ctx.can.tenantAdmin
    ? h("button", { type: "button", class: "button-danger-quiet", id: "erase-user", on: { click: () => eraseUser() } }, "Erase user…")
    : null;

  let options = [];
  let activeIndex = -1;
  let nextCursor = null;
  let pending = null;
  let timer = 0;
  const known = { project: new Set(), session: new Set() };
  let shownUser = null;

  function close() {
    listbox.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    activeIndex = -1;
  }

  function highlight(index) {
    const items = listbox.querySelectorAll("[role=option]");
    activeIndex = Math.max(-1, Math.min(items.length - 1, index));
    items.forEach((item, i) => item.setAttribute("aria-selected", i === activeIndex ? "true" : "false"));
    if (activeIndex >= 0) {
      input.setAttribute("aria-activedescendant", items[activeIndex].id);
      items[activeIndex].scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function choose(userId) {
    window.clearTimeout(timer); // a search still due would open the list again
    pending = null;
    close();
    input.value = userId;
    if (userId !== ctx.selection.user) ctx.select({ user: userId, project: "", session: "" });
  }

  function renderOptions(append) {
    if (!append) clear(listbox);
    const start = listbox.querySelectorAll("[role=option]").length;
    options.slice(start).forEach((user, offset) => {
      const index = start + offset;
      listbox.append(
        h(
          "li",
          {
            role: "option",
            id: `user-option-${index}`,
            "aria-selected": "false",
            dataset: { user: user.user_id },
            on: {
              mousedown: (event) => event.preventDefault(), // keep the focus in the input
              click: () => choose(String(user.user_id)),
            },
          },
          h("span", { class: "option-main" }, shown(user.user_id)),
          h(
            "span",
            { class: "option-detail" },
            user.episodes !== undefined ? `${number(user.episodes)} memories` : "",
            user.last_seen ? [" · last seen ", timeNode(user.last_seen)] : null,
          ),
        ),
      );
    });
    const more = listbox.querySelector(".option-more");
    if (more) more.remove();
    if (nextCursor) {
      listbox.append(
        h(
          "li",
          { class: "option-more", role: "presentation" },
          h("button", { type: "button", tabindex: "-1", on: { mousedown: (e) => e.preventDefault(), click: () => search(input.value, true) } }, "More users…"),
        ),
      );
    }
    const open = options.length > 0 && document.activeElement === input;
    listbox.hidden = !open;
    input.setAttribute("aria-expanded", open ? "true" : "false");
  }

  async function search(text, more) {
    const request = Symbol("search");
    pending = request;
    try {
      const page = await ctx.api.get("users", { q: text.trim(), limit: PAGE, cursor: more ? nextCursor : "" });
      if (pending !== request) return; // a newer search answered first
      const users = list(page.users);
      options = more ? options.concat(users) : users;
      nextCursor = page.next_cursor || null;
      status.textContent = options.length
        ? `${options.length}${nextCursor ? "+" : ""} user${options.length === 1 ? "" : "s"} found`
        : text.trim()
          ? `No user id contains “${text.trim()}”. Press Enter to open it anyway.`
          : "No users with memories yet: publish turns first (memstream demo).";
      renderOptions(more);
      if (!more) highlight(-1);
    } catch (failure) {
      if (pending !== request) return;
      const { title, text: advice } = explain(failure);
      status.textContent = `${title}. ${advice} You can still type a user id and press Enter.`;
      options = [];
      renderOptions(false);
    }
  }

  input.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(() => search(input.value, false), SEARCH_DELAY_MS);
  });
  input.addEventListener("focus", () => {
    if (!options.length) search(input.value, false);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown") {
      event.preventDefault();
      if (listbox.hidden && options.length) renderOptions(false);
      highlight(activeIndex + 1);
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      highlight(activeIndex - 1);
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (activeIndex >= 0 && options[activeIndex]) choose(String(options[activeIndex].user_id));
      else if (input.value.trim()) choose(input.value.trim());
    } else if (event.key === "Escape") {
      close();
    }
  });
  input.addEventListener("blur", () => window.setTimeout(close, 150));

  const applyScope = () => {
    const change = { project: project.value.trim(), session: session.value.trim() };
    if (change.project !== ctx.selection.project || change.session !== ctx.selection.session) ctx.select(change);
  };
  for (const field of [project, session]) {
    field.addEventListener("change", applyScope);
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        applyScope();
      }
    });
  }

  async function eraseUser() {
    const user = ctx.selection.user;
    if (!user) {
      ctx.announce("Choose a user first.");
      return;
    }
    const confirmed = await ctx.confirm({
      title: `Erase ${user}?`,
      text:
        "Every episode, fact, graph edge, skill and event-log row of this user is deleted for good, and nothing of " +
        "the user is stored again until consent is recorded. This cannot be undone.",
      confirmLabel: "Erase for good",
      typeToConfirm: user,
    });
    if (!confirmed) return;
    try {
      const done = await ctx.api.post(`users/${segment(user)}/erase`, {});
      ctx.announce(`Erased ${user}: ${number(done.episodes)} episodes and ${number(done.events)} events removed.`);
      ctx.select({ user: "", project: "", session: "" });
    } catch (failure) {
      const { title, text } = explain(failure);
      ctx.announce(`${title}. ${text}`);
    }
  }

  const node = h(
    "div",
    { class: "picker" },
    h(
      "div",
      { class: "picker-user" },
      h("label", { for: "user-input", class: "field-name" }, "User"),
      h("div", { class: "combo" }, input, listbox),
      status,
    ),
    h("label", { class: "field" }, h("span", { class: "field-name" }, "Project"), project),
    h("label", { class: "field" }, h("span", { class: "field-name" }, "Session"), session),
    projects,
    sessions,
    h("div", { class: "picker-actions" }, current, erase),
  );

  return {
    node,
    focus: () => input.focus(),
    show(selection) {
      if (selection.user !== shownUser) {
        shownUser = selection.user;
        for (const kind of ["project", "session"]) known[kind].clear();
        clear(projects);
        clear(sessions);
      }
      input.value = selection.user || "";
      project.value = selection.project || "";
      session.value = selection.session || "";
      clear(current, selection.user ? ["Showing ", h("strong", {}, selection.user)] : "No user chosen");
      if (erase) erase.disabled = !selection.user;
    },
    suggest(kind, values) {
      const target = kind === "project" ? projects : sessions;
      for (const value of values) {
        if (value && !known[kind].has(value)) {
          known[kind].add(value);
          target.append(h("option", { value }));
        }
      }
    },
  };
}
