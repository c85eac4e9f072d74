// Search playground: GET /v1/search with every filter and toggle, each hit with the parts of its
// score (ranks, RRF, decay, boost, MMR penalty) and the sub-queries that found it.

import { badge, emptyState, h, isoFromLocal, labelled, list, meter, number, shown, timeNode } from "../dom.js";
import { forgetMemory, guarded, noUser, shell, toolbarForm } from "./common.js";

const KINDS = [
  ["episodic", "turns"],
  ["procedural", "lessons"],
  ["summary", "summaries"],
  ["fact", "facts"],
  ["skill", "skills"],
];
const SCOPES = ["global", "project", "session"];

function checkboxes(name, values, hint) {
  return h(
    "fieldset",
    { class: "checks" },
    h("legend", {}, name, hint ? h("span", { class: "legend-hint" }, ` (${hint})`) : null),
    values.map(([value, label]) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", value, name: `${name}-${value}`, class: `search-${name.toLowerCase()}` }), ` ${label}`),
    ),
  );
}

function toggle(id, label, checked) {
  return h("label", { class: "check" }, h("input", { type: "checkbox", id, checked }), ` ${label}`);
}

function checked(root, selector) {
  return [...root.querySelectorAll(selector)].filter((box) => box.checked).map((box) => box.value);
}

// The parts of a score, each as a small bar (fraction of the largest among the hits, or of 1).
function scoreParts(hit, scale) {
  const parts = hit.parts && typeof hit.parts === "object" ? hit.parts : {};
  const rank = (value) => (typeof value === "number" && value > 0 ? 1 / value : 0);
  const rows = [
    ["vector rank", parts.vector_rank ? `#${parts.vector_rank}` : "—", rank(parts.vector_rank), "vector"],
    ["text rank", parts.text_rank ? `#${parts.text_rank}` : "—", rank(parts.text_rank), "text"],
    ["RRF", number(parts.rrf, 4), scale.rrf ? (parts.rrf || 0) / scale.rrf : 0, "rrf"],
    ["decay", `× ${number(parts.decay, 3)}`, parts.decay ?? 0, "decay"],
    ["boost", `× ${number(parts.boost, 3)}`, scale.boost ? (parts.boost || 0) / scale.boost : 0, "boost"],
    ["MMR penalty", number(parts.mmr_penalty, 3), parts.mmr_penalty ?? 0, "mmr"],
  ];
  return h(
    "dl",
    { class: "parts", "aria-label": "Parts of the score" },
    rows.map(([name, text, fraction, kind]) =>
      h("div", { class: "part" }, h("dt", {}, name), h("dd", {}, meter(fraction, `${name} ${text}`, kind), h("span", { class: "part-value" }, text))),
    ),
  );
}

export function searchView(ctx) {
  const q = h("input", { type: "search", id: "search-q", required: true, placeholder: "What to look for", autocomplete: "off" });
  const k = h("input", { type: "number", id: "search-k", min: "1", max: "100", value: "10" });
  const tags = h("input", { type: "text", id: "search-tags", placeholder: "any (comma-separated)", autocomplete: "off" });
  const since = h("input", { type: "datetime-local", id: "search-since", step: "1" });
  const until = h("input", { type: "datetime-local", id: "search-until", step: "1" });
  const decompose = h(
    "select",
    { id: "search-decompose" },
    h("option", { value: "off" }, "off"),
    h("option", { value: "rules", selected: true }, "rules"),
    h("option", { value: "llm" }, "llm (needs a Gemini key)"),
  );
  const kinds = checkboxes("Kinds", KINDS, "none ticked: all");
  const scopes = checkboxes("Scopes", SCOPES.map((scope) => [scope, scope]), "facts; none ticked: all");
  const toggles = h(
    "fieldset",
    { class: "checks" },
    h("legend", {}, "Ranking"),
    toggle("search-decay", "decay", true),
    toggle("search-boosts", "boosts", true),
    toggle("search-mmr", "MMR", true),
  );
  const form = toolbarForm(
    "search",
    [
      h("div", { class: "toolbar-row" }, labelled("Query", q, "wide"), labelled("Hits", k, "narrow"), labelled("Decompose", decompose)),
      h("div", { class: "toolbar-row" }, kinds, scopes, toggles),
      h("div", { class: "toolbar-row" }, labelled("Tags", tags), labelled("Since", since), labelled("Until", until)),
    ],
    () => run(),
    "Search",
  );
  const view = shell({
    id: "search",
    title: "Search playground",
    intro: "Hybrid retrieval as an agent gets it: vector and full-text ranks fused (RRF), times decay and boost, then MMR for variety. Switch parts off to see what each does.",
    controls: form,
  });
  let last = null;

  function hitItem(hit, answer, scale) {
    const queries = list(answer.decomposition && answer.decomposition.queries);
    const found = list(hit.sub_queries);
    const forget =
      ctx.can.forget && hit.id && (hit.kind === "episode" || hit.kind === "fact")
        ? h(
            "button",
            {
              type: "button",
              class: "button-danger-quiet",
              "aria-label": `Forget memory ${hit.id}`,
              on: {
                click: async () => {
                  if (await forgetMemory(ctx, view, hit.id, "This memory")) await run();
                },
              },
            },
            "Forget",
          )
        : null;
    return h(
      "li",
      { class: "hit", dataset: { id: hit.id || "" } },
      h(
        "div",
        { class: "hit-head" },
        h("span", { class: "score", title: "score: what the hits are ordered by, RRF × decay × boost less MMR's penalty for redundancy" }, number(hit.score, 4)),
        badge(shown(hit.memory_type || hit.kind), hit.memory_type === "procedural" ? "lesson" : hit.memory_type === "summary" ? "summary" : "plain"),
        hit.scope ? badge(hit.scope, "category") : null,
        hit.role ? badge(hit.role, "plain") : null,
        timeNode(hit.created_at),
        hit.session_id ? h("span", { class: "meta" }, `session ${hit.session_id}`) : null,
        hit.project_id ? h("span", { class: "meta" }, `project ${hit.project_id}`) : null,
        forget,
      ),
      h("p", { class: "content" }, shown(hit.content)),
      scoreParts(hit, scale),
      found.length
        ? h(
            "p",
            { class: "meta" },
            "Found by ",
            found.map((index, i) => [i ? ", " : "", h("span", { class: "subquery-ref", title: shown(queries[index]) }, `#${index + 1}`)]),
          )
        : null,
    );
  }

  function render(answer) {
    const hits = list(answer.hits);
    const decomposition = answer.decomposition || {};
    const queries = list(decomposition.queries);
    const scale = {
      rrf: Math.max(0, ...hits.map((hit) => (hit.parts && hit.parts.rrf) || 0)),
      boost: Math.max(0, ...hits.map((hit) => (hit.parts && hit.parts.boost) || 0)),
    };
    view.show(
      h(
        "div",
        { class: "decomposition" },
        h("h3", {}, `Sub-queries (${shown(decomposition.method)})`),
        queries.length
          ? h("ol", { class: "subqueries" }, queries.map((text) => h("li", {}, text)))
          : h("p", { class: "muted" }, "The query as written."),
        h("p", { class: "meta" }, `embedding ${shown(answer.embedding_model)} · vector scan ${shown(answer.vector_scan)}`),
      ),
      hits.length
        ? h("ol", { class: "hits" }, hits.map((hit) => hitItem(hit, answer, scale)))
        : emptyState("No hits", "Nothing matched: widen the kinds and scopes, clear the dates and tags, or check the project and session above."),
    );
  }

  async function run() {
    if (!ctx.selection.user) {
      view.show(noUser());
      return;
    }
    if (!q.value.trim()) {
      view.show(emptyState("What should memory be searched for?", "Type a query — a question an agent would ask, e.g. “which database do I use?” — and press Search."));
      q.focus();
      return;
    }
    view.loading("hits");
    const answer = await guarded(view, "hits", () =>
      ctx.api.get("search", {
        user_id: ctx.selection.user,
        project_id: ctx.selection.project,
        session_id: ctx.selection.session,
        q: q.value.trim(),
        k: k.value,
        memory_types: checked(kinds, "input").join(","),
        scopes: checked(scopes, "input").join(","),
        tags: tags.value.trim(),
        since: isoFromLocal(since.value),
        until: isoFromLocal(until.value),
        decay: document.getElementById("search-decay").checked,
        boosts: document.getElementById("search-boosts").checked,
        mmr: document.getElementById("search-mmr").checked,
        decompose: decompose.value,
      }),
    );
    if (answer === null) return;
    last = answer;
    render(answer);
  }

  return {
    id: "search",
    label: "Search",
    node: view.node,
    refresh: () => {
      if (!ctx.selection.user) view.show(noUser());
      else if (q.value.trim()) run();
      else if (!last) view.show(emptyState("Ask memory something", "Type a query above and press Search; each hit shows how its score came about."));
    },
  };
}
