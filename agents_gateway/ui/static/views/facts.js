// Facts: the user's current facts by scope (GET /v1/entities?all=true: every project's and
// session's, or only the picked ones'), or those valid at a moment ("as of"); a fact's versions
// on click (GET /v1/entities/{name}/history).

import { segment } from "../api.js";
import { badge, clear, emptyState, h, idNode, isoFromLocal, labelled, list, shown, timeNode } from "../dom.js";
import { forgetMemory, guarded, noUser, shell, toolbarForm } from "./common.js";

const SCOPES = [
  ["global", "Global", "What holds for the user everywhere."],
  ["project", "Project", "Rules and constraints of a project."],
  ["session", "Session", "What was said for one session only."],
];

function scopeOf(fact) {
  return SCOPES.some(([scope]) => scope === fact.scope) ? fact.scope : "global";
}

export function factsView(ctx) {
  const scope = h(
    "select",
    { id: "facts-scope" },
    h("option", { value: "" }, "All scopes"),
    SCOPES.map(([value, label]) => h("option", { value }, label)),
  );
  const at = h("input", { type: "datetime-local", id: "facts-at", step: "1" });
  const now = h(
    "button",
    {
      type: "button",
      class: "button-quiet",
      id: "facts-now",
      on: {
        click: () => {
          at.value = "";
          load();
        },
      },
    },
    "Now",
  );
  const view = shell({
    id: "facts",
    title: "Facts",
    intro: "What memstream believes about the user now — or, with “as of”, what it believed then. Click a fact to see its versions: when each held, why it changed, and which event changed it.",
    controls: toolbarForm("facts", [labelled("Scope", scope), labelled("As of", at), now], () => load()),
  });
  const history = h("aside", { class: "history", id: "facts-history", "aria-live": "polite", hidden: true });
  let facts = [];

  function factRow(fact) {
    const open = h(
      "button",
      {
        type: "button",
        class: "link entity",
        "aria-label": `History of ${shown(fact.entity)}`,
        dataset: { entity: fact.entity || "" },
        on: { click: () => showHistory(fact.entity) },
      },
      shown(fact.entity),
    );
    return h(
      "tr",
      { dataset: { factId: fact.fact_id || "" } },
      h("th", { scope: "row" }, open),
      h("td", {}, fact.category ? badge(fact.category, "category") : "—"),
      h("td", { class: "content" }, shown(fact.summary)),
      h("td", { class: "num" }, shown(fact.version)),
      h("td", {}, timeNode(fact.valid_from)),
      h("td", {}, idNode(fact.source_event_id)),
    );
  }

  function factTable(rows) {
    return h(
      "table",
      { class: "facts-table" },
      h(
        "thead",
        {},
        h("tr", {}, ["Subject", "Category", "Fact", "Version", "Valid since", "Event"].map((name) => h("th", { scope: "col" }, name))),
      ),
      h("tbody", {}, rows.map(factRow)),
    );
  }

  function render() {
    if (!facts.length) {
      view.show(
        emptyState(
          at.value ? "No facts held then" : "No facts yet",
          at.value
            ? "Nothing was known at that moment: choose a later time, or Now."
            : "The memory worker extracts facts from user turns (preferences, project rules). Run it (`memstream up` does), or choose another user or project.",
        ),
        history,
      );
      return;
    }
    const sections = SCOPES.map(([key, label, about]) => {
      const rows = facts.filter((fact) => scopeOf(fact) === key);
      if (!rows.length) return null;
      const projects = [...new Set(rows.map((fact) => fact.project_id).filter(Boolean))];
      const heading = key === "project" && projects.length ? `${label}: ${projects.join(", ")}` : label;
      return h(
        "section",
        { class: `fact-scope fact-scope-${key}`, "aria-label": `${label} facts` },
        h("h3", {}, heading, h("span", { class: "count" }, ` ${rows.length}`)),
        h("p", { class: "muted" }, about),
        factTable(rows),
      );
    });
    view.show(h("div", { class: "facts-layout" }, h("div", { class: "facts-lists" }, sections), history));
  }

  function versionItem(fact, entity) {
    const current = !fact.valid_to;
    const forget = ctx.can.forget && fact.fact_id
      ? h(
          "button",
          {
            type: "button",
            class: "button-danger-quiet",
            "aria-label": `Forget version ${shown(fact.version)} of ${entity}`,
            on: {
              click: async () => {
                if (await forgetMemory(ctx, view, fact.fact_id, `Version ${shown(fact.version)} of “${entity}”`)) {
                  await load();
                  await showHistory(entity);
                }
              },
            },
          },
          "Forget",
        )
      : null;
    return h(
      "li",
      { class: current ? "version version-current" : "version" },
      h(
        "div",
        { class: "version-head" },
        h("strong", {}, `Version ${shown(fact.version)}`),
        current ? badge("current", "current") : badge("superseded", "archived"),
        fact.scope ? badge(fact.project_id ? `${fact.scope} · ${fact.project_id}` : fact.scope, "plain") : null,
        forget,
      ),
      h("p", { class: "content" }, shown(fact.summary)),
      h(
        "dl",
        { class: "version-meta" },
        h("dt", {}, "Valid from"),
        h("dd", {}, timeNode(fact.valid_from)),
        h("dt", {}, "Valid to"),
        h("dd", {}, fact.valid_to ? timeNode(fact.valid_to) : "now"),
        h("dt", {}, "Why"),
        h("dd", {}, shown(fact.change_reason)),
        h("dt", {}, "Changed by event"),
        h("dd", {}, h("code", { class: "event-id" }, shown(fact.source_event_id))),
        h("dt", {}, "Stated by"),
        h("dd", {}, `${list(fact.sources).length || 1} event${list(fact.sources).length > 1 ? "s" : ""}`),
        h("dt", {}, "Extractor"),
        h("dd", {}, h("code", {}, shown(fact.extractor))),
      ),
    );
  }

  async function showHistory(entity) {
    if (!entity) return;
    history.hidden = false;
    clear(history, h("h3", {}, "History of ", h("q", {}, entity)), h("p", { class: "loading" }, "Loading versions…"));
    const page = await guarded(view, null, () => ctx.api.get(`entities/${segment(entity)}/history`, { user_id: ctx.selection.user }));
    if (page === null) {
      history.hidden = true;
      return;
    }
    const versions = list(page.facts);
    clear(
      history,
      h(
        "div",
        { class: "history-head" },
        h("h3", { id: "history-title", tabindex: "-1" }, "History of ", h("q", {}, entity)),
        h("button", { type: "button", class: "button-quiet", "aria-label": "Close the history", on: { click: () => (history.hidden = true) } }, "Close"),
      ),
      versions.length
        ? h("ol", { class: "versions" }, versions.map((fact) => versionItem(fact, entity)))
        : h("p", { class: "muted" }, "No versions this key may see."),
    );
    history.querySelector("#history-title").focus();
  }

  async function load() {
    if (!ctx.selection.user) {
      view.show(noUser());
      return;
    }
    history.hidden = true;
    view.loading("facts");
    const page = await guarded(view, "facts", () =>
      ctx.api.get("entities", {
        user_id: ctx.selection.user,
        scope: scope.value,
        project_id: ctx.selection.project,
        session_id: ctx.selection.session,
        at: isoFromLocal(at.value),
        // Every project's and session's facts, not only those that apply where the picker points.
        all: true,
      }),
    );
    if (page === null) return;
    facts = list(page.facts);
    ctx.suggest("project", facts.map((fact) => fact.project_id));
    render();
  }

  return { id: "facts", label: "Facts", node: view.node, refresh: load };
}
