// Skills: what the user's agents tried and how it went (GET /v1/skills): success rate,
// attempts, the steps and the last feedback of each skill.

import { emptyState, h, list, meter, number, percent, shown, timeNode } from "../dom.js";
import { guarded, noUser, shell } from "./common.js";

const PAGE = 50;

function rateOf(skill) {
  if (typeof skill.success_rate === "number") return skill.success_rate;
  if (typeof skill.attempts === "number" && skill.attempts > 0 && typeof skill.successes === "number") return skill.successes / skill.attempts;
  return null;
}

function skillCard(skill) {
  const rate = rateOf(skill);
  const steps = list(skill.steps);
  const kind = rate === null ? "plain" : rate >= 0.7 ? "good" : rate >= 0.4 ? "fair" : "poor";
  return h(
    "li",
    { class: "skill", dataset: { skill: skill.name || "" } },
    h(
      "div",
      { class: "skill-head" },
      h("h3", {}, shown(skill.name)),
      h(
        "span",
        { class: "skill-rate" },
        meter(rate ?? 0, `success rate ${percent(rate)}`, kind),
        h("strong", {}, ` ${percent(rate)}`),
        h("span", { class: "muted" }, ` success · ${number(skill.successes)} of ${number(skill.attempts)} attempts`),
      ),
    ),
    skill.description ? h("p", { class: "content" }, skill.description) : null,
    steps.length ? h("ol", { class: "steps", "aria-label": "Steps" }, steps.map((step) => h("li", {}, shown(step)))) : null,
    h(
      "p",
      { class: "meta" },
      "Last used ",
      skill.last_used_at ? timeNode(skill.last_used_at) : "never",
    ),
    skill.last_feedback
      ? h("blockquote", { class: "feedback" }, h("span", { class: "meta-name" }, "Last feedback: "), skill.last_feedback)
      : null,
  );
}

export function skillsView(ctx) {
  const view = shell({
    id: "skills",
    title: "Skills",
    intro: "What the user's agents tried, from the tool and skill outcomes they reported (POST /v1/tool-events): how often it worked, the steps, and the last feedback — a failure's feedback is also kept as a lesson.",
  });
  let skills = [];
  let cursor = null;

  function render() {
    if (!skills.length) {
      view.show(emptyState("No skills recorded", "Agents report outcomes with POST /v1/tool-events (skill, status, feedback, steps); each skill appears here with its success rate."));
      return;
    }
    view.show(
      h("ul", { class: "skills" }, skills.map(skillCard)),
      cursor ? h("button", { type: "button", class: "button-quiet more", on: { click: () => load(true) } }, "More skills") : null,
    );
  }

  async function load(more) {
    if (!ctx.selection.user) {
      view.show(noUser());
      return;
    }
    if (!more) view.loading("skills");
    const page = await guarded(view, more ? null : "skills", () =>
      ctx.api.get("skills", { user_id: ctx.selection.user, limit: PAGE, cursor: more ? cursor : "" }),
    );
    if (page === null) return;
    skills = more ? skills.concat(list(page.skills)) : list(page.skills);
    cursor = page.next_cursor || null;
    render();
  }

  return { id: "skills", label: "Skills", node: view.node, refresh: () => load(false) };
}
