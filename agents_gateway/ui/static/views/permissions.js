// Permissions: the tenant's tool rules (GET /v1/permissions/rules), "may this command run?"
// (POST /v1/permissions/evaluate) with the decision, tier and deciding rule; with a tenant-level
// admin key, adding and removing rules and granting a command once.

import { badge, clear, emptyState, h, idNode, labelled, list, shown, timeNode } from "../dom.js";
import { guarded, shell } from "./common.js";

const DECISION_KINDS = { ALLOW: "allow", BLOCK: "block", PENDING: "pending" };

export function permissionsView(ctx) {
  const view = shell({
    id: "permissions",
    title: "Permissions",
    intro: "Before an agent runs a tool, memstream decides: a one-time grant, then the project's rules in order, then the global ones, else PENDING for a human. Patterns are RE2.",
  });
  const rulesBox = h("section", { class: "rules", "aria-labelledby": "rules-title" });
  const verdict = h("div", { class: "verdict", id: "evaluate-result", "aria-live": "polite" });
  let rules = [];

  // The evaluation form (and the allow-once grant, for the same command).
  const evalSession = h("input", { type: "text", id: "evaluate-session", required: true, autocomplete: "off", spellcheck: "false" });
  const evalProject = h("input", { type: "text", id: "evaluate-project", autocomplete: "off", spellcheck: "false", placeholder: "none" });
  const evalAgent = h("input", { type: "text", id: "evaluate-agent", autocomplete: "off", spellcheck: "false", placeholder: ctx.who.agent_id || "any" });
  const evalTool = h("input", { type: "text", id: "evaluate-tool", required: true, value: "shell", autocomplete: "off", spellcheck: "false" });
  const evalCommand = h("textarea", { id: "evaluate-command", required: true, rows: "2", spellcheck: "false", placeholder: "pytest --timeout=30" });
  const grant = ctx.can.tenantAdmin
    ? h("button", { type: "button", class: "button-quiet", id: "allow-once", on: { click: () => allowOnce() } }, "Allow once…")
    : null;
  const evaluateForm = h(
    "form",
    { class: "panel-form", id: "evaluate-form", on: { submit: (event) => { event.preventDefault(); evaluate(); } } },
    h("h3", {}, "Evaluate a command"),
    h("div", { class: "toolbar-row" }, labelled("Session", evalSession), labelled("Project", evalProject), labelled("Agent", evalAgent), labelled("Tool", evalTool)),
    labelled("Command", evalCommand, "wide"),
    h("div", { class: "form-actions" }, h("button", { type: "submit", class: "button-primary" }, "Evaluate"), grant),
    verdict,
  );

  function body() {
    const identity = {
      session_id: evalSession.value.trim(),
      tool: evalTool.value.trim(),
      command: evalCommand.value,
    };
    if (evalProject.value.trim()) identity.project_id = evalProject.value.trim();
    if (evalAgent.value.trim()) identity.agent_id = evalAgent.value.trim();
    return identity;
  }

  function missing(request) {
    const absent = ["session_id", "tool", "command"].filter((name) => !String(request[name] || "").trim());
    if (!absent.length) return false;
    clear(verdict, h("p", { class: "error-inline" }, `Fill in ${absent.join(", ").replace("session_id", "session")} first.`));
    return true;
  }

  async function evaluate() {
    const request = body();
    if (missing(request)) return;
    const answer = await guarded(view, null, () => ctx.api.post("permissions/evaluate", request));
    if (answer === null) return;
    const rule = rules.find((item) => item.rule_id && item.rule_id === answer.rule_id);
    clear(
      verdict,
      h(
        "div",
        { class: `decision decision-${DECISION_KINDS[answer.decision] || "pending"}` },
        h("span", { class: "decision-word", id: "decision-word" }, shown(answer.decision)),
        h("span", {}, " tier ", h("strong", { id: "decision-tier" }, shown(answer.tier))),
      ),
      h("p", { class: "content", id: "decision-reason" }, shown(answer.reason)),
      answer.rule_id
        ? h(
            "p",
            { class: "meta" },
            "Decided by rule ",
            idNode(answer.rule_id),
            rule ? [": ", badge(rule.effect, rule.effect === "ALLOW" ? "allow" : "block"), " ", h("code", {}, shown(rule.pattern))] : null,
          )
        : null,
      answer.grant_id ? h("p", { class: "meta" }, "Used the one-time grant ", idNode(answer.grant_id)) : null,
    );
    for (const row of rulesBox.querySelectorAll("tr[data-rule-id]")) {
      row.classList.toggle("rule-decided", row.dataset.ruleId === answer.rule_id);
    }
  }

  async function allowOnce() {
    const request = body();
    if (missing(request)) return;
    const confirmed = await ctx.confirm({
      title: "Allow this command once?",
      text: `The next evaluation of exactly this command, by tool ${request.tool}, in session ${request.session_id}${request.project_id ? ` and project ${request.project_id}` : " (no project)"}${request.agent_id ? `, for agent ${request.agent_id}` : ""}, is allowed — once, within the grant's lifetime.`,
      confirmLabel: "Grant once",
    });
    if (!confirmed) return;
    const answer = await guarded(view, null, () => ctx.api.post("permissions/allow-once", request));
    if (answer === null) return;
    clear(verdict, h("p", { class: "content", id: "grant-result" }, "Granted once: ", idNode(answer.grant_id), `, for ${shown(answer.expires_in_s)} s.`));
    ctx.announce(`Granted the command once for ${shown(answer.expires_in_s)} seconds.`);
  }

  // Adding a rule (tenant-level admin keys only).
  function ruleForm() {
    const tool = h("input", { type: "text", id: "rule-tool", required: true, value: "shell", autocomplete: "off", spellcheck: "false" });
    const effect = h("select", { id: "rule-effect" }, h("option", { value: "BLOCK" }, "BLOCK"), h("option", { value: "ALLOW" }, "ALLOW"));
    const pattern = h("input", { type: "text", id: "rule-pattern", required: true, placeholder: "\\brm -rf\\b", autocomplete: "off", spellcheck: "false" });
    const project = h("input", { type: "text", id: "rule-project", placeholder: "global", autocomplete: "off", spellcheck: "false" });
    const position = h("input", { type: "number", id: "rule-position", value: "0", step: "1" });
    const description = h("input", { type: "text", id: "rule-description", autocomplete: "off" });
    const add = async () => {
      if (!tool.value.trim() || !pattern.value) return;
      const request = {
        tool: tool.value.trim(),
        effect: effect.value,
        pattern: pattern.value,
        position: Number(position.value) || 0,
        description: description.value,
      };
      if (project.value.trim()) request.project_id = project.value.trim();
      const created = await guarded(view, null, () => ctx.api.post("permissions/rules", request));
      if (created === null) return;
      pattern.value = "";
      description.value = "";
      ctx.announce(`Added rule ${shown(created.rule_id)}.`);
      await loadRules();
    };
    return h(
      "form",
      { class: "panel-form", id: "rule-form", on: { submit: (event) => { event.preventDefault(); add(); } } },
      h("h3", {}, "Add a rule"),
      h(
        "div",
        { class: "toolbar-row" },
        labelled("Tool", tool),
        labelled("Effect", effect),
        labelled("Pattern (RE2)", pattern, "wide"),
        labelled("Project", project),
        labelled("Position", position, "narrow"),
        labelled("Description", description),
      ),
      h("div", { class: "form-actions" }, h("button", { type: "submit", class: "button-primary" }, "Add rule")),
    );
  }

  async function removeRule(rule) {
    const confirmed = await ctx.confirm({
      title: "Remove this rule?",
      text: `${rule.effect} ${rule.pattern} for ${rule.tool}${rule.project_id ? ` in ${rule.project_id}` : " (global)"}. Commands it decided will fall to the next rule, or PENDING.`,
      confirmLabel: "Remove",
    });
    if (!confirmed) return;
    const done = await guarded(view, null, () => ctx.api.delete(`permissions/rules/${encodeURIComponent(rule.rule_id)}`));
    if (done === null) return;
    ctx.announce("Rule removed.");
    await loadRules();
  }

  function renderRules() {
    const title = h("h3", { id: "rules-title" }, `Rules (${rules.length})`);
    if (!rules.length) {
      clear(
        rulesBox,
        title,
        emptyState(
          "No rules yet",
          ctx.can.tenantAdmin
            ? "Every command is PENDING until a rule decides it. Add BLOCK rules for what must never run, then anchored ALLOW rules (^pytest( |$))."
            : "Every command is PENDING until a rule decides it. A tenant-level key with the admin scope can add rules.",
        ),
      );
      return;
    }
    const ordered = [...rules].sort((a, b) => (a.project_id ? 0 : 1) - (b.project_id ? 0 : 1));
    clear(
      rulesBox,
      title,
      h(
        "table",
        { class: "rules-table" },
        h("thead", {}, h("tr", {}, ["Scope", "Tool", "Position", "Effect", "Pattern", "Description", "Added", ctx.can.tenantAdmin ? "" : null].filter((name) => name !== null).map((name) => h("th", { scope: "col" }, name)))),
        h(
          "tbody",
          {},
          ordered.map((rule) =>
            h(
              "tr",
              { dataset: { ruleId: rule.rule_id || "" } },
              h("td", {}, rule.project_id ? `project ${rule.project_id}` : "global"),
              h("td", {}, h("code", {}, shown(rule.tool))),
              h("td", { class: "num" }, shown(rule.position)),
              h("td", {}, badge(shown(rule.effect), rule.effect === "ALLOW" ? "allow" : "block")),
              h("td", {}, h("code", { class: "pattern" }, shown(rule.pattern))),
              h("td", { class: "content" }, shown(rule.description)),
              h("td", {}, timeNode(rule.created_at)),
              ctx.can.tenantAdmin
                ? h("td", {}, h("button", { type: "button", class: "button-danger-quiet", "aria-label": `Remove rule ${shown(rule.pattern)}`, on: { click: () => removeRule(rule) } }, "Remove"))
                : null,
            ),
          ),
        ),
      ),
    );
  }

  async function loadRules() {
    const page = await guarded(view, null, () => ctx.api.get("permissions/rules"));
    if (page === null) return;
    rules = list(page.rules);
    renderRules();
  }

  view.show(h("div", { class: "permissions-layout" }, evaluateForm, rulesBox, ctx.can.tenantAdmin ? ruleForm() : null));

  return {
    id: "permissions",
    label: "Permissions",
    node: view.node,
    refresh: () => {
      if (!evalSession.value) evalSession.value = ctx.selection.session || "explorer";
      if (!evalProject.value) evalProject.value = ctx.selection.project || "";
      loadRules();
    },
  };
}
