// Confirmation before anything that cannot be undone, in a modal <dialog> (never window.confirm).
// With typeToConfirm, the person must type that text (a user id) before the action is enabled.

import { h } from "./dom.js";

export function confirmAction({ title, text, confirmLabel, typeToConfirm }) {
  return new Promise((resolve) => {
    const typed = typeToConfirm
      ? h("input", { type: "text", id: "confirm-typed", autocomplete: "off", spellcheck: "false" })
      : null;
    const confirm = h("button", { type: "button", class: "button-danger", id: "confirm-ok", disabled: Boolean(typeToConfirm) }, confirmLabel);
    const cancel = h("button", { type: "button", class: "button-quiet", id: "confirm-cancel" }, "Cancel");
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-text" },
      h("h2", { id: "confirm-title" }, title),
      h("p", { id: "confirm-text" }, text),
      typed
        ? h(
            "label",
            { class: "field", for: "confirm-typed" },
            h("span", { class: "field-name" }, "Type "),
            h("code", {}, typeToConfirm),
            h("span", { class: "field-name" }, " to confirm"),
          )
        : null,
      typed,
      h("div", { class: "dialog-actions" }, cancel, confirm),
    );
    let answered = false;
    const finish = (value) => {
      if (answered) return;
      answered = true;
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    if (typed) {
      typed.addEventListener("input", () => {
        confirm.disabled = typed.value !== typeToConfirm;
      });
    }
    confirm.addEventListener("click", () => finish(!typed || typed.value === typeToConfirm));
    cancel.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", () => finish(false)); // Escape
    dialog.addEventListener("close", () => finish(false));
    document.body.append(dialog);
    dialog.showModal();
    (typed || cancel).focus();
  });
}
