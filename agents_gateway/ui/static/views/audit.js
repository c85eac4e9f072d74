// Audit: the tenant's append-only audit log (GET /v1/audit), filtered by time, action and user.
// Shown to keys with the admin scope only.

import { emptyState, h, isoFromLocal, labelled, list, shown, timeNode } from "../dom.js";
import { guarded, shell, toolbarForm } from "./common.js";

const PAGE = 100;
const ACTIONS = [
  "memory.", "permission.", "user.", "key.", "memory.insert", "memory.supersede", "memory.merge", "memory.delete", "memory.expire", "memory.compaction",
  "memory.skill_run", "permission.decision", "permission.allow_once", "permission.rule.create",
  "permission.rule.delete", "user.erase", "user.consent", "key.create", "key.revoke",
];

function recordsOf(page) {
  for (const name of ["records", "audit", "entries", "items"]) {
    if (Array.isArray(page[name])) return page[name];
  }
  return [];
}

function detailText(detail) {
  if (detail === undefined || detail === null) return "";
  if (typeof detail === "string") return detail;
  try {
    return JSON.stringify(detail, null, 2);
  } catch {
    return String(detail);
  }
}

export function auditView(ctx) {
  const since = h("input", { type: "datetime-local", id: "audit-since", step: "1" });
  const until = h("input", { type: "datetime-local", id: "audit-until", step: "1" });
  const action = h("input", { type: "text", id: "audit-action", list: "audit-actions", autocomplete: "off", spellcheck: "false", placeholder: "any" });
  const actions = h("datalist", { id: "audit-actions" }, ACTIONS.map((value) => h("option", { value })));
  const onlyUser = h("input", { type: "checkbox", id: "audit-user-only" });
  const view = shell({
    id: "audit",
    title: "Audit",
    intro: "Every change to memory, permission decision, rule change, erasure and forgotten memory, newest first. Append-only: nobody can edit or delete a record. Records hold ids, counts and hashes, never what a memory says; an action ending in a dot (permission.) selects all under it.",
    controls: toolbarForm(
      "audit",
      [labelled("Since", since), labelled("Until", until), labelled("Action", action), actions, labelled("Only records naming the chosen user", onlyUser, "inline")],
      () => load(false),
    ),
  });
  let records = [];
  let cursor = null;

  function row(record) {
    const detail = detailText(record.detail);
    return h(
      "tr",
      {},
      h("td", {}, timeNode(record.at || record.created_at || record.time)),
      h("td", {}, h("code", {}, shown(record.action))),
      h("td", {}, h("code", {}, shown(record.actor))),
      h("td", { class: "content" }, shown(record.subject)),
      h("td", {}, detail ? h("details", {}, h("summary", {}, detail.split("\n").length > 1 ? "detail" : detail.slice(0, 60)), h("pre", { class: "detail" }, detail)) : "—"),
    );
  }

  function render() {
    if (!records.length) {
      view.show(emptyState("No audit records", "Nothing was recorded with these filters: widen the dates, clear the action, or untick “only the chosen user”."));
      return;
    }
    view.show(
      h(
        "table",
        { class: "audit-table" },
        h("thead", {}, h("tr", {}, ["When", "Action", "Actor", "Subject", "Detail"].map((name) => h("th", { scope: "col" }, name)))),
        h("tbody", {}, records.map(row)),
      ),
      cursor ? h("button", { type: "button", class: "button-quiet more", on: { click: () => load(true) } }, "More records") : null,
    );
  }

  async function load(more) {
    if (!more) view.loading("the audit log");
    const page = await guarded(view, more ? null : "audit", () =>
      ctx.api.get("audit", {
        since: isoFromLocal(since.value),
        until: isoFromLocal(until.value),
        action: action.value.trim(),
        user_id: onlyUser.checked ? ctx.selection.user : "",
        limit: PAGE,
        cursor: more ? cursor : "",
      }),
    );
    if (page === null) return;
    records = more ? records.concat(recordsOf(page)) : recordsOf(page);
    cursor = page.next_cursor || null;
    render();
  }

  return { id: "audit", label: "Audit", node: view.node, available: ctx.can.audit, refresh: () => load(false) };
}
