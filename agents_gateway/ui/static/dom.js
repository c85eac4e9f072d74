// Building the page from data that is never trusted: every string becomes a text node or an
// attribute value, never markup: the explorer never asks the browser to parse HTML.

const SVG_NS = "http://www.w3.org/2000/svg";
// Attributes that could run code or leave the page are refused outright.
const FORBIDDEN = /^(on|formaction$|srcdoc$|innerhtml$|outerhtml$)/i;
const URL_ATTRIBUTES = new Set(["href", "src", "action", "xlink:href"]);

function setAttributes(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "on") {
      for (const [type, handler] of Object.entries(value)) node.addEventListener(type, handler);
      continue;
    }
    if (name === "dataset") {
      for (const [key, item] of Object.entries(value)) node.dataset[key] = String(item);
      continue;
    }
    if (FORBIDDEN.test(name)) throw new Error(`refused attribute ${name}`);
    const text = value === true ? "" : String(value);
    if (URL_ATTRIBUTES.has(name.toLowerCase()) && !/^(#|\/ui\/)/.test(text)) {
      throw new Error(`refused URL ${text} for ${name}`);
    }
    if (name === "value" && "value" in node) node.value = text;
    else node.setAttribute(name, text);
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// h("button", {class: "x", on: {click}}, "text", otherNode): an element; strings are text.
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttributes(node, attrs);
  return append(node, children);
}

// The same for SVG elements.
export function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttributes(node, attrs);
  return append(node, children);
}

export function clear(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

// A field that may be missing: the value, or a dash.
export function shown(value) {
  if (value === undefined || value === null || value === "") return "—";
  return String(value);
}

const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
});
const DAY = new Intl.DateTimeFormat(undefined, { weekday: "short", year: "numeric", month: "short", day: "numeric" });

export function parseTime(value) {
  if (!value) return null;
  const time = new Date(value);
  return Number.isNaN(time.getTime()) ? null : time;
}

// "12 Mar 2026, 09:30:00" in the person's time zone, with the exact instant as a tooltip.
export function timeNode(value) {
  const time = parseTime(value);
  if (time === null) return h("span", { class: "muted" }, shown(value));
  return h("time", { datetime: time.toISOString(), title: time.toISOString() }, DATE_TIME.format(time));
}

export function dayLabel(value) {
  const time = parseTime(value);
  return time === null ? "Unknown day" : DAY.format(time);
}

export function dayKey(value) {
  const time = parseTime(value);
  if (time === null) return "unknown";
  return `${time.getFullYear()}-${time.getMonth() + 1}-${time.getDate()}`;
}

// The value of a datetime-local input as an ISO 8601 instant (the API wants a timezone).
export function isoFromLocal(value) {
  if (!value) return "";
  const time = new Date(value);
  return Number.isNaN(time.getTime()) ? "" : time.toISOString();
}

export function number(value, digits = 3) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "—";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

export function percent(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "—";
  return `${Math.round(value * 100)}%`;
}

export function list(value) {
  return Array.isArray(value) ? value : [];
}

// A labelled control: <label>text <control></label>, so every control has a name.
export function labelled(text, control, extra) {
  return h("label", { class: extra ? `field ${extra}` : "field" }, h("span", { class: "field-name" }, text), control);
}

// A small badge: kind is a CSS modifier from a fixed set, text is shown as text.
export function badge(text, kind) {
  return h("span", { class: `badge badge-${kind || "plain"}` }, text);
}

// A bar of width fraction (0..1), for scores and rates; its label says the number. The width is
// set through the CSSOM: the policy allows no inline style in markup.
export function meter(fraction, label, kind) {
  const value = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const fill = h("span", { class: "meter-fill" });
  fill.style.width = `${(value * 100).toFixed(1)}%`;
  return h("span", { class: `meter meter-${kind || "plain"}`, role: "img", "aria-label": label, title: label }, fill);
}

export function emptyState(title, advice) {
  return h("div", { class: "empty", role: "status" }, h("p", { class: "empty-title" }, title), h("p", {}, advice));
}

export function loading(what) {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

// A stable short form of an id (the whole id in a tooltip and for copying).
export function idNode(value) {
  if (!value) return h("span", { class: "muted" }, "—");
  const text = String(value);
  return h("code", { class: "id", title: text }, text.length > 13 ? `${text.slice(0, 8)}…${text.slice(-4)}` : text);
}
