// What every view shares: a heading, a toolbar of labelled controls, a place for errors and
// the view's content, and the empty state for "no user chosen yet".

import { explain } from "../api.js";
import { clear, emptyState, h, loading } from "../dom.js";

export function shell({ id, title, intro, controls }) {
  const errors = h("div", { class: "error", role: "alert", id: `${id}-error`, hidden: true });
  const body = h("div", { class: "view-body", id: `${id}-body` });
  const node = h(
    "div",
    { class: `view view-${id}` },
    h("div", { class: "view-head" }, h("h2", {}, title), intro ? h("p", { class: "intro" }, intro) : null),
    controls ? h("div", { class: "toolbar" }, controls) : null,
    errors,
    body,
  );
  return {
    node,
    body,
    fail(failure) {
      const { title: what, text } = explain(failure);
      clear(errors, h("strong", {}, what), " ", text);
      errors.hidden = false;
    },
    ok() {
      clear(errors);
      errors.hidden = true;
    },
    show(...children) {
      clear(body, ...children);
    },
    loading(what) {
      clear(body, loading(what));
    },
  };
}

export function noUser() {
  return emptyState("No user chosen", "Choose a user above: type part of a user id and pick one from the list.");
}

// A form whose submit runs action (Enter in any field submits it; nothing is ever posted by the
// browser itself: the policy says form-action 'none').
export function toolbarForm(id, children, action, label = "Show") {
  return h(
    "form",
    {
      class: "toolbar-form",
      id: `${id}-form`,
      on: {
        submit: (event) => {
          event.preventDefault();
          action();
        },
      },
    },
    children,
    h("button", { type: "submit", class: "button-primary" }, label),
  );
}

// Runs a request for a view: errors shown in the view, the previous content kept on failure.
export async function guarded(view, what, request) {
  view.ok();
  try {
    return await request();
  } catch (failure) {
    view.fail(failure);
    if (what) view.show();
    return null;
  }
}

// Confirms and forgets one memory (DELETE /v1/memories/{id}); true when it was forgotten.
export async function forgetMemory(ctx, view, id, what) {
  const confirmed = await ctx.confirm({
    title: "Forget this memory for good?",
    text: `${what} is deleted and tombstoned: no replay brings it back. What was derived from it (facts, lessons) stays, forgettable by its own id.`,
    confirmLabel: "Forget",
  });
  if (!confirmed) return false;
  try {
    const done = await ctx.api.delete(`memories/${encodeURIComponent(id)}`);
    ctx.invalidate();
    const extra = done && done.restored_fact_id ? " Its earlier version is current again." : "";
    ctx.announce(`Forgot ${done && done.kind ? done.kind : "memory"} ${id}.${extra}`);
    return true;
  } catch (failure) {
    view.fail(failure);
    return false;
  }
}
