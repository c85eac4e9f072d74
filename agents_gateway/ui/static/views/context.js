// Context preview: GET /v1/context — the prompt an agent would get, each section's tokens
// against the budget, what was left out, and the tokens a whole-history prompt would need.

import { h, labelled, list, meter, number, percent, shown } from "../dom.js";
import { guarded, noUser, shell, toolbarForm } from "./common.js";

const SECTION_NAMES = { facts: "Long-term facts", summary: "Rolling summary", recent: "Recent turns", relevant: "Relevant memories" };
const NEW_SESSION = "explorer-preview";

// The budget as a bar: each section's tokens, then the prompt's own headings and layout (what
// the total holds beyond the sections), then what is left unused.
function stackedBar(sections, budget, packed) {
  const total = Math.max(1, budget);
  const sectionTokens = sections.reduce((sum, section) => sum + Math.max(0, Number(section.tokens) || 0), 0);
  const parts = sections.map((section) => [SECTION_NAMES[section.name] ? section.name : "other", shown(section.name), Math.max(0, Number(section.tokens) || 0)]);
  if (packed > sectionTokens) parts.push(["layout", "headings and layout", packed - sectionTokens]);
  const label = parts.map(([, name, tokens]) => `${name} ${tokens} tokens`).join(", ") + `, of a budget of ${budget}`;
  const bar = h("div", { class: "stack", role: "img", "aria-label": label });
  let used = 0;
  for (const [kind, name, tokens] of parts) {
    used += tokens;
    const part = h("span", { class: `stack-part stack-${kind}`, title: `${name}: ${tokens} tokens` });
    part.style.width = `${Math.min(100, (tokens / total) * 100).toFixed(2)}%`;
    bar.append(part);
  }
  const free = h("span", { class: "stack-part stack-free", title: `unused: ${Math.max(0, total - used)} tokens` });
  free.style.width = `${Math.max(0, ((total - used) / total) * 100).toFixed(2)}%`;
  bar.append(free);
  return bar;
}

export function contextView(ctx) {
  const query = h("input", { type: "search", id: "context-query", placeholder: "The user's next message (optional)", autocomplete: "off" });
  const budget = h("input", { type: "number", id: "context-budget", min: "64", max: "200000", step: "1", value: "600" });
  const session = h("input", { type: "text", id: "context-session", autocomplete: "off", spellcheck: "false" });
  const view = shell({
    id: "context",
    title: "Context preview",
    intro: "What GET /v1/context would hand an agent before its next turn: facts, the session's rolling summary, recent turns and relevant memories, packed to the budget.",
    controls: toolbarForm(
      "context",
      [labelled("Next message", query, "wide"), labelled("Budget (tokens)", budget, "narrow"), labelled("Session", session)],
      () => load(),
      "Preview",
    ),
  });

  function render(answer) {
    const sections = list(answer.sections);
    const budgetTokens = Number(answer.budget) || Number(budget.value) || 0;
    const naive = Number(answer.naive_tokens) || 0;
    const packed = Number(answer.tokens) || 0;
    const biggest = Math.max(1, naive, packed);
    const dropped = sections.filter((section) => section.dropped > 0);
    const sectionTotal = sections.reduce((sum, section) => sum + Math.max(0, Number(section.tokens) || 0), 0);
    view.show(
      h(
        "div",
        { class: "context-figures" },
        h("p", { class: "big-number" }, h("strong", { id: "context-tokens" }, number(packed)), ` of ${number(budgetTokens)} tokens`, h("span", { class: "muted" }, ` (${shown(answer.tokenizer)})`)),
        stackedBar(sections, budgetTokens, packed),
        h(
          "table",
          { class: "sections" },
          h("thead", {}, h("tr", {}, ["Section", "Tokens", "Share of budget", "Items", "Left out"].map((name) => h("th", { scope: "col" }, name)))),
          h(
            "tbody",
            {},
            sections.map((section) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, h("span", { class: `swatch stack-${SECTION_NAMES[section.name] ? section.name : "other"}` }), ` ${SECTION_NAMES[section.name] || shown(section.name)}`),
                h("td", { class: "num" }, number(section.tokens)),
                h("td", { class: "num" }, budgetTokens ? percent((Number(section.tokens) || 0) / budgetTokens) : "—"),
                h("td", { class: "num" }, number(section.items)),
                h("td", { class: "num" }, number(section.dropped)),
              ),
            ),
          ),
        ),
        packed > sectionTotal
          ? h("p", { class: "meta" }, h("span", { class: "swatch stack-layout" }), ` ${number(packed - sectionTotal)} tokens of the prompt's headings and layout.`)
          : null,
        h(
          "p",
          { class: "meta" },
          dropped.length
            ? `Left out to stay within the budget: ${dropped.map((section) => `${section.dropped} ${SECTION_NAMES[section.name] || section.name}`.toLowerCase()).join(", ")}.`
            : "Nothing was left out.",
        ),
        h(
          "div",
          { class: "naive" },
          h("h3", {}, "Packed vs the whole history"),
          h("div", { class: "compare" }, h("span", { class: "compare-name" }, "packed"), meter(packed / biggest, `packed ${packed} tokens`, "packed"), h("span", { class: "part-value" }, `${number(packed)} tokens`)),
          h("div", { class: "compare" }, h("span", { class: "compare-name" }, "whole history"), meter(naive / biggest, `whole history ${naive} tokens`, "naive"), h("span", { class: "part-value" }, `${number(naive)} tokens`)),
          h("p", { class: "meta" }, `Saved ${number(answer.saved_tokens)} tokens (${percent(answer.saved_ratio)}).`),
        ),
      ),
      list(answer.decomposition && answer.decomposition.queries).length
        ? h("p", { class: "meta" }, "Sub-queries: ", list(answer.decomposition.queries).map((text, i) => [i ? " · " : "", h("q", {}, text)]))
        : null,
      h("h3", {}, "The prompt"),
      h("pre", { class: "prompt", id: "context-prompt", tabindex: "0" }, shown(answer.prompt)),
    );
  }

  async function load() {
    if (!ctx.selection.user) {
      view.show(noUser());
      return;
    }
    const sessionId = session.value.trim() || ctx.selection.session || NEW_SESSION;
    session.value = sessionId;
    view.loading("the context");
    const answer = await guarded(view, "context", () =>
      ctx.api.get("context", {
        user_id: ctx.selection.user,
        session_id: sessionId,
        project_id: ctx.selection.project,
        query: query.value.trim(),
        budget: budget.value,
      }),
    );
    if (answer === null) return;
    render(answer);
  }

  return {
    id: "context",
    label: "Context",
    node: view.node,
    refresh: () => {
      session.value = ctx.selection.session || session.value || NEW_SESSION;
      if (!ctx.selection.user) view.show(noUser());
      else load();
    },
  };
}
