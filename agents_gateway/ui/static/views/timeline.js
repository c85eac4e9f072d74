// Timeline: the user's memories (GET /v1/memories), grouped by session and day; lessons, daily
// summaries and archived originals marked; each with the event it came from.

import { badge, dayKey, dayLabel, emptyState, h, isoFromLocal, labelled, list, meter, number, parseTime, shown, timeNode } from "../dom.js";
import { forgetMemory, guarded, noUser, shell, toolbarForm } from "./common.js";

const PAGE = 100;
const TYPES = [
  ["", "All kinds"],
  ["episodic", "Turns (episodic)"],
  ["procedural", "Lessons (procedural)"],
  ["summary", "Daily summaries"],
];
const TYPE_BADGES = { procedural: ["lesson", "lesson"], summary: ["daily summary", "summary"], episodic: ["turn", "plain"] };

function memoryTime(memory) {
  return memory.created_at || memory.event_time || (memory.source && memory.source.event_time) || null;
}

// Where a memory came from: its event (a turn's own, a lesson's tool outcome, a summary's
// compaction record), the Kafka partition and offset, and what produced it.
function sourceLine(memory) {
  const source = memory.source && typeof memory.source === "object" ? memory.source : {};
  const eventId = source.event_id || memory.event_id || null;
  const parts = [h("span", { class: "meta-name" }, "event "), h("code", { class: "event-id" }, shown(eventId))];
  const time = memoryTime(memory);
  if (time) parts.push(" at ", timeNode(time));
  if (source.topic) parts.push(" · ", h("code", {}, source.topic));
  if (source.partition !== undefined && source.partition !== null) parts.push(` · partition ${source.partition}`);
  if (source.offset !== undefined && source.offset !== null) parts.push(` · offset ${source.offset}`);
  const producer = source.produced_by || source.extractor;
  if (producer) parts.push(" · by ", h("code", {}, producer));
  if (memory.ingested_at) parts.push(" · stored ", timeNode(memory.ingested_at));
  if (memory.archived_into) parts.push(" · archived into summary ", h("code", { class: "event-id" }, memory.archived_into));
  return h("p", { class: "meta source" }, parts);
}

function memoryItem(ctx, view, memory, onForgotten) {
  const type = memory.memory_type || "episodic";
  const [typeText, typeKind] = TYPE_BADGES[type] || [type, "plain"];
  // Turns are the common case: only lessons and summaries get a kind badge.
  const badges = type === "episodic" ? [] : [badge(typeText, typeKind)];
  if (memory.archived) badges.push(badge("archived", "archived"));
  if (memory.shared) badges.push(badge("shared", "shared"));
  if (memory.role) badges.push(badge(memory.role, `role-${["user", "assistant", "tool", "system"].includes(memory.role) ? memory.role : "other"}`));
  const tags = list(memory.tags);
  const forget =
    ctx.can.forget && memory.id
      ? h(
          "button",
          {
            type: "button",
            class: "button-danger-quiet forget",
            "aria-label": `Forget memory ${memory.id}`,
            on: {
              click: async () => {
                if (await forgetMemory(ctx, view, memory.id, "This memory")) onForgotten(memory.id);
              },
            },
          },
          "Forget",
        )
      : null;
  return h(
    "li",
    { class: `memory memory-${typeKind}${memory.archived ? " memory-archived" : ""}`, dataset: { id: memory.id || "" } },
    h(
      "div",
      { class: "memory-head" },
      h("span", { class: "badges" }, badges),
      timeNode(memoryTime(memory)),
      memory.agent_id ? h("span", { class: "meta" }, `agent ${memory.agent_id}`) : null,
      memory.project_id ? h("span", { class: "meta" }, `project ${memory.project_id}`) : null,
      typeof memory.importance === "number"
        ? h("span", { class: "importance" }, meter(memory.importance, `importance ${number(memory.importance, 2)}`, "importance"), ` ${number(memory.importance, 2)}`)
        : null,
      forget,
    ),
    h("p", { class: "content" }, shown(memory.content)),
    tags.length ? h("p", { class: "tags" }, tags.map((tag) => h("span", { class: "tag" }, tag))) : null,
    sourceLine(memory),
  );
}

// Sessions (most recent first), each with its days and items in the order they happened.
export function groupMemories(memories) {
  const sessions = new Map();
  for (const memory of memories) {
    const session = memory.session_id || "(no session)";
    if (!sessions.has(session)) sessions.set(session, { session, newest: 0, days: new Map() });
    const group = sessions.get(session);
    const time = parseTime(memoryTime(memory));
    group.newest = Math.max(group.newest, time ? time.getTime() : 0);
    const key = dayKey(memoryTime(memory));
    if (!group.days.has(key)) group.days.set(key, { label: dayLabel(memoryTime(memory)), first: time ? time.getTime() : 0, items: [] });
    const day = group.days.get(key);
    day.first = Math.min(day.first, time ? time.getTime() : 0);
    day.items.push(memory);
  }
  const at = (memory) => {
    const time = parseTime(memoryTime(memory));
    return time ? time.getTime() : 0;
  };
  return [...sessions.values()]
    .sort((a, b) => b.newest - a.newest)
    .map((group) => ({
      session: group.session,
      days: [...group.days.values()].sort((a, b) => a.first - b.first).map((day) => ({ ...day, items: [...day.items].sort((a, b) => at(a) - at(b)) })),
    }));
}

export function timelineView(ctx) {
  const type = h("select", { id: "timeline-type" }, TYPES.map(([value, label]) => h("option", { value }, label)));
  const since = h("input", { type: "datetime-local", id: "timeline-since", step: "1" });
  const until = h("input", { type: "datetime-local", id: "timeline-until", step: "1" });
  const archived = h("input", { type: "checkbox", id: "timeline-archived", checked: true });
  const view = shell({
    id: "timeline",
    title: "Timeline",
    intro: "What the user's agents stored, by session and day: turns, lessons learnt from failures, daily summaries and the originals they archived.",
    controls: toolbarForm("timeline", [labelled("Kind", type), labelled("Since", since), labelled("Until", until), labelled("Archived originals", archived, "inline")], () => load(false)),
  });
  let memories = [];
  let cursor = null;

  function render() {
    if (!memories.length) {
      view.show(
        emptyState(
          "No memories here",
          ctx.selection.session || ctx.selection.project || type.value || since.value || until.value
            ? "Nothing matches these filters: clear the project, session, kind or dates."
            : "This user has no stored memories yet. Publish turns (POST /v1/turns) and let the worker store them.",
        ),
      );
      return;
    }
    const groups = groupMemories(memories);
    const remove = (id) => {
      memories = memories.filter((memory) => memory.id !== id);
      render();
    };
    view.show(
      h("p", { class: "summary-line" }, `${memories.length} memor${memories.length === 1 ? "y" : "ies"} in ${groups.length} session${groups.length === 1 ? "" : "s"}`),
      groups.map((group) =>
        h(
          "section",
          { class: "session-group", "aria-label": `Session ${group.session}` },
          h("h3", {}, "Session ", h("code", {}, group.session)),
          group.days.map((day) =>
            h(
              "div",
              { class: "day-group" },
              h("h4", {}, day.label),
              h("ol", { class: "memories" }, day.items.map((memory) => memoryItem(ctx, view, memory, remove))),
            ),
          ),
        ),
      ),
      cursor ? h("button", { type: "button", class: "button-quiet more", on: { click: () => load(true) } }, "Load older memories") : null,
    );
  }

  async function load(more) {
    if (!ctx.selection.user) {
      view.show(noUser());
      return;
    }
    if (!more) view.loading("memories");
    const page = await guarded(view, more ? null : "memories", () =>
      ctx.api.get("memories", {
        user_id: ctx.selection.user,
        project_id: ctx.selection.project,
        session_id: ctx.selection.session,
        memory_type: type.value,
        include_archived: archived.checked,
        since: isoFromLocal(since.value),
        until: isoFromLocal(until.value),
        limit: PAGE,
        cursor: more ? cursor : "",
      }),
    );
    if (page === null) return;
    const found = list(page.memories);
    memories = more ? memories.concat(found) : found;
    cursor = page.next_cursor || null;
    ctx.suggest("session", found.map((memory) => memory.session_id));
    ctx.suggest("project", found.map((memory) => memory.project_id));
    render();
  }

  return { id: "timeline", label: "Timeline", node: view.node, refresh: () => load(false) };
}
