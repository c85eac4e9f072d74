// The memory explorer: sign in with a key, choose a user, look at what memstream remembers.

import { Api, ApiFailure, explain, forgetKey, storeKey, storedKey } from "./api.js";
import { clear, h, list } from "./dom.js";
import { confirmAction } from "./dialogs.js";
import { createUserPicker } from "./picker.js";
import { auditView } from "./views/audit.js";
import { contextView } from "./views/context.js";
import { factsView } from "./views/facts.js";
import { graphView } from "./views/graph.js";
import { permissionsView } from "./views/permissions.js";
import { searchView } from "./views/search.js";
import { skillsView } from "./views/skills.js";
import { timelineView } from "./views/timeline.js";

const VIEWS = [timelineView, factsView, graphView, skillsView, searchView, contextView, permissionsView, auditView];
const SELECTION_ITEM = "memstream.explorer.selection";

const page = {
  login: document.getElementById("login"),
  loginForm: document.getElementById("login-form"),
  keyInput: document.getElementById("api-key"),
  loginError: document.getElementById("login-error"),
  explorer: document.getElementById("explorer"),
  identity: document.getElementById("identity"),
  scopeBar: document.getElementById("scope-bar"),
  tabs: document.getElementById("tabs"),
  panels: document.getElementById("panels"),
  announcer: document.getElementById("announcer"),
};

// What a key may do, from GET /v1/whoami: the page shows only what would succeed.
export function capabilities(who) {
  const scopes = new Set(list(who && who.scopes));
  const tenantKey = !(who && who.agent_id);
  return {
    read: scopes.has("read"),
    admin: scopes.has("admin"),
    // Erasing a user, rules and allow-once grants change the whole tenant: a tenant-level key.
    tenantAdmin: scopes.has("admin") && tenantKey,
    // Forgetting one memory: admin with a tenant key; an agent's key forgets its own with ingest.
    forget: tenantKey ? scopes.has("admin") : scopes.has("ingest") || scopes.has("admin"),
    // The audit log is the whole tenant's.
    audit: scopes.has("admin") && tenantKey,
  };
}

function savedSelection() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(SELECTION_ITEM) || "{}");
    return { user: saved.user || "", project: saved.project || "", session: saved.session || "" };
  } catch {
    return { user: "", project: "", session: "" };
  }
}

let announced = 0;

// A short message in a live region (shown as a toast for a few seconds).
function announce(text) {
  page.announcer.textContent = "";
  window.clearTimeout(announced);
  // Set a moment later, so that a repeated message is announced again.
  window.setTimeout(() => {
    page.announcer.textContent = text;
    announced = window.setTimeout(() => {
      page.announcer.textContent = "";
    }, 8000);
  }, 30);
}

function signOut(reason) {
  forgetKey();
  sessionStorage.removeItem(SELECTION_ITEM);
  page.explorer.hidden = true;
  page.login.hidden = false;
  clear(page.identity);
  clear(page.tabs);
  clear(page.panels);
  clear(page.scopeBar);
  page.keyInput.value = "";
  showLoginError(reason);
  page.keyInput.focus();
}

function showLoginError(failure) {
  if (!failure) {
    clear(page.loginError);
    page.loginError.hidden = true;
    return;
  }
  const { title, text } = explain(failure);
  clear(page.loginError, h("strong", {}, title), " ", text);
  page.loginError.hidden = false;
}

function identityNode(who, can) {
  const role = who.agent_id ? `agent ${who.agent_id}` : "tenant-level key";
  return [
    h(
      "span",
      { class: "who" },
      h("span", { class: "who-tenant", title: "tenant" }, who.tenant_id || "?"),
      h("span", { class: "who-detail" }, ` · ${role} · `),
      h("span", { class: "who-scopes" }, list(who.scopes).join(", ") || "no scopes"),
      can.admin || list(who.scopes).includes("ingest") ? null : h("span", { class: "badge badge-plain" }, "read-only"),
    ),
    h("button", { type: "button", class: "button-quiet", id: "sign-out", on: { click: () => signOut(null) } }, "Sign out"),
  ];
}

function buildTabs(views, onSelect) {
  const buttons = views.map((view, index) =>
    h(
      "button",
      {
        type: "button",
        role: "tab",
        id: `tab-${view.id}`,
        "aria-controls": `panel-${view.id}`,
        "aria-selected": "false",
        tabindex: index === 0 ? "0" : "-1",
        dataset: { view: view.id },
        on: { click: () => onSelect(view.id, true) },
      },
      view.label,
    ),
  );
  page.tabs.addEventListener("keydown", (event) => {
    const current = buttons.indexOf(document.activeElement);
    if (current < 0) return;
    const moves = { ArrowRight: current + 1, ArrowLeft: current - 1, Home: 0, End: buttons.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = (moves[event.key] + buttons.length) % buttons.length;
    onSelect(views[next].id, true);
  });
  clear(page.tabs, buttons);
  return buttons;
}

async function start(api, who) {
  const can = capabilities(who);
  const selection = savedSelection();
  const listeners = new Set();
  const ctx = {
    api,
    who,
    can,
    selection,
    announce,
    confirm: confirmAction,
    // Sessions and projects seen in the user's memory, offered as suggestions.
    suggest: (kind, values) => picker.suggest(kind, values),
    select(change) {
      Object.assign(selection, change);
      sessionStorage.setItem(SELECTION_ITEM, JSON.stringify(selection));
      picker.show(selection);
      for (const listener of listeners) listener(selection);
    },
    onSelection: (listener) => listeners.add(listener),
  };
  const picker = createUserPicker(ctx);
  clear(page.scopeBar, picker.node);
  picker.show(selection);
  clear(page.identity, identityNode(who, can));

  const views = VIEWS.map((make) => make(ctx)).filter((view) => view.available !== false);
  const panels = views.map((view) =>
    h("section", { role: "tabpanel", id: `panel-${view.id}`, "aria-labelledby": `tab-${view.id}`, hidden: true, tabindex: "0" }, view.node),
  );
  clear(page.panels, panels);
  let active = null;
  const stale = new Set(views.map((view) => view.id));
  const select = (id, focus) => {
    active = id;
    buttons.forEach((button, index) => {
      const on = views[index].id === id;
      button.setAttribute("aria-selected", on ? "true" : "false");
      button.tabIndex = on ? 0 : -1;
      panels[index].hidden = !on;
      if (on && focus) button.focus();
    });
    if (window.location.hash !== `#${id}`) window.history.replaceState(null, "", `#${id}`);
    if (stale.delete(id)) views.find((view) => view.id === id).refresh();
  };
  const buttons = buildTabs(views, select);
  // Memory changed (a memory forgotten): the other views load again when they are shown.
  ctx.invalidate = () => {
    for (const view of views) if (view.id !== active) stale.add(view.id);
  };
  ctx.onSelection(() => {
    ctx.invalidate();
    views.find((view) => view.id === active).refresh();
  });
  page.login.hidden = true;
  page.explorer.hidden = false;
  const wanted = window.location.hash.slice(1);
  select(views.some((view) => view.id === wanted) ? wanted : views[0].id, false);
  if (!selection.user) picker.focus();
}

async function signIn(key) {
  const api = new Api(key, {
    onUnauthorized: (failure) => signOut(failure),
  });
  const who = await api.get("whoami");
  return { api, who };
}

page.loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = page.keyInput.value.trim();
  if (!key) {
    showLoginError(new ApiFailure({ status: 401, code: "no_key", message: "paste an API key first" }));
    return;
  }
  const button = page.loginForm.querySelector("button[type=submit]");
  button.disabled = true;
  showLoginError(null);
  try {
    const { api, who } = await signIn(key);
    storeKey(key);
    page.keyInput.value = "";
    await start(api, who);
  } catch (failure) {
    showLoginError(failure);
  } finally {
    button.disabled = false;
  }
});

async function resume() {
  const key = storedKey();
  if (!key) {
    page.login.hidden = false;
    page.keyInput.focus();
    return;
  }
  try {
    const { api, who } = await signIn(key);
    await start(api, who);
  } catch (failure) {
    if (failure instanceof ApiFailure && failure.status === 401) return; // signed out already
    page.login.hidden = false;
    showLoginError(failure);
  }
}

resume();
