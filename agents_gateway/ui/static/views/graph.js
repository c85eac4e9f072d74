// Graph: the entities around one (GET /v1/graph/neighbors), drawn as SVG with a small force
// layout; click (or Enter on) a node to expand it. The same graph as a list, for screen readers.

import { emptyState, h, labelled, list, s, shown } from "../dom.js";
import { layout, parseHop } from "../layout.js";
import { guarded, shell, toolbarForm } from "./common.js";

const NODE_RADIUS = 7;
// The frame grows with the graph (within bounds) so that labels keep a readable size.
const MIN_HEIGHT_PX = 380;
const MAX_HEIGHT_PX = 1500;
const MIN_ZOOM = 0.2;
const MAX_ZOOM = 5;

export function graphView(ctx) {
  const entity = h("input", { type: "text", id: "graph-entity", list: "graph-entities", autocomplete: "off", spellcheck: "false", placeholder: "e.g. a project name" });
  const seen = h("datalist", { id: "graph-entities" });
  const depth = h("select", { id: "graph-depth" }, [1, 2, 3, 4].map((n) => h("option", { value: String(n), selected: n === 2 }, String(n))));
  const direction = h(
    "select",
    { id: "graph-direction" },
    h("option", { value: "out" }, "out (what it uses)"),
    h("option", { value: "in" }, "in (what uses it)"),
    h("option", { value: "both" }, "both"),
  );
  const labels = h("input", { type: "checkbox", id: "graph-labels", checked: true });
  const view = shell({
    id: "graph",
    title: "Graph",
    intro: "Entities the user's facts connect, and how: “cloudretail -uses-> fastapi”. Click a node (or focus it and press Enter) to expand it.",
    controls: toolbarForm(
      "graph",
      [labelled("Entity", entity), seen, labelled("Hops", depth), labelled("Direction", direction), labelled("Edge labels", labels, "inline")],
      () => load(),
    ),
  });

  const nodes = new Map(); // id -> {id, depth, expanded}
  const edges = new Map(); // "s|p|t" -> {source, target, label}
  let positions = new Map();
  let root = "";
  let zoom = { x: 0, y: 0, width: 800, height: 500 };
  let fitted = zoom;
  let svg = null;
  let filled = "";
  let frameHeight = 560;

  function addNeighbours(answer, from, baseDepth) {
    const start = answer.entity || from;
    if (!nodes.has(start)) nodes.set(start, { id: start, depth: baseDepth, expanded: false });
    nodes.get(start).expanded = true;
    for (const neighbour of list(answer.neighbors)) {
      const name = neighbour.entity;
      if (!name) continue;
      const hops = list(neighbour.path).map(parseHop).filter(Boolean);
      for (const hop of hops) {
        for (const id of [hop.source, hop.target]) {
          if (!nodes.has(id)) nodes.set(id, { id, depth: baseDepth + (id === name ? neighbour.depth || 1 : 1), expanded: false });
        }
        edges.set(`${hop.source}|${hop.label}|${hop.target}`, hop);
      }
      if (!nodes.has(name)) nodes.set(name, { id: name, depth: baseDepth + (neighbour.depth || 1), expanded: false });
      if (!hops.length) edges.set(`${start}|related|${name}`, { source: start, target: name, label: "related" });
    }
    for (const id of nodes.keys()) {
      if (![...seen.children].some((option) => option.value === id)) seen.append(h("option", { value: id }));
    }
  }

  function fit() {
    const points = [...positions.values()];
    if (!points.length) return;
    const xs = points.map((p) => p.x);
    const ys = points.map((p) => p.y);
    const margin = 80;
    const minX = Math.min(...xs) - margin;
    const minY = Math.min(...ys) - margin / 2;
    const width = Math.max(500, Math.max(...xs) + margin * 1.5 - minX); // labels go to the right
    const height = Math.max(300, Math.max(...ys) + margin / 2 - minY);
    fitted = { x: minX, y: minY, width, height };
    zoom = { ...fitted };
    const frameWidth = view.body.clientWidth || 1200;
    const scale = Math.min(1.3, frameWidth / width);
    frameHeight = Math.round(Math.max(MIN_HEIGHT_PX, Math.min(MAX_HEIGHT_PX, height * scale)));
  }

  function applyZoom() {
    if (svg) svg.setAttribute("viewBox", `${zoom.x} ${zoom.y} ${zoom.width} ${zoom.height}`);
  }

  function zoomBy(factor, cx, cy) {
    const scale = fitted.width / (zoom.width * factor);
    if (scale < MIN_ZOOM || scale > MAX_ZOOM) return;
    const centreX = cx ?? zoom.x + zoom.width / 2;
    const centreY = cy ?? zoom.y + zoom.height / 2;
    zoom = {
      x: centreX - (centreX - zoom.x) * factor,
      y: centreY - (centreY - zoom.y) * factor,
      width: zoom.width * factor,
      height: zoom.height * factor,
    };
    applyZoom();
  }

  function drawing() {
    const showLabels = labels.checked;
    const defs = s(
      "defs",
      {},
      s(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
        s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }),
      ),
    );
    const edgeNodes = [...edges.values()].map((edge) => {
      const a = positions.get(edge.source);
      const b = positions.get(edge.target);
      if (!a || !b) return null;
      const length = Math.max(1, Math.hypot(b.x - a.x, b.y - a.y));
      const ux = (b.x - a.x) / length;
      const uy = (b.y - a.y) / length;
      return s(
        "g",
        { class: "edge" },
        s("line", {
          x1: (a.x + ux * NODE_RADIUS).toFixed(1),
          y1: (a.y + uy * NODE_RADIUS).toFixed(1),
          x2: (b.x - ux * (NODE_RADIUS + 2)).toFixed(1),
          y2: (b.y - uy * (NODE_RADIUS + 2)).toFixed(1),
          "marker-end": "url(#arrow)",
        }),
        s("title", {}, `${edge.source} -${edge.label}-> ${edge.target}`),
        showLabels
          ? s("text", { x: ((a.x + b.x) / 2 + uy * 8).toFixed(1), y: ((a.y + b.y) / 2 - ux * 8 + 3).toFixed(1), class: "edge-label" }, edge.label)
          : null,
      );
    });
    const nodeNodes = [...nodes.values()].map((node) => {
      const at = positions.get(node.id);
      if (!at) return null;
      const classes = ["node"];
      if (node.id === root) classes.push("node-root");
      if (node.expanded) classes.push("node-expanded");
      const label = `${node.id}${node.id === root ? " (start)" : ""}${node.expanded ? ", expanded" : ", press Enter to expand"}`;
      const expand = () => {
        if (!node.expanded) expandNode(node.id);
      };
      return s(
        "g",
        {
          class: classes.join(" "),
          tabindex: "0",
          role: "button",
          "aria-label": label,
          dataset: { entity: node.id },
          transform: `translate(${at.x.toFixed(1)} ${at.y.toFixed(1)})`,
          on: {
            click: expand,
            keydown: (event) => {
              if (event.key === "Enter" || event.key === " ") {
                event.preventDefault();
                expand();
              }
            },
          },
        },
        s("circle", { r: String(node.id === root ? NODE_RADIUS + 3 : NODE_RADIUS) }),
        s("text", { x: String((node.id === root ? NODE_RADIUS + 3 : NODE_RADIUS) + 4), y: "4", class: "node-label" }, node.id),
        s("title", {}, label),
      );
    });
    svg = s(
      "svg",
      { class: "graph", role: "group", "aria-label": `Graph around ${root}: ${nodes.size} entities, ${edges.size} relations`, preserveAspectRatio: "xMidYMid meet" },
      defs,
      s("g", { class: "edges" }, edgeNodes),
      s("g", { class: "nodes" }, nodeNodes),
    );
    svg.style.height = `${frameHeight}px`;
    applyZoom();
    let drag = null;
    svg.addEventListener("wheel", (event) => {
      event.preventDefault();
      const box = svg.getBoundingClientRect();
      const cx = zoom.x + ((event.clientX - box.left) / box.width) * zoom.width;
      const cy = zoom.y + ((event.clientY - box.top) / box.height) * zoom.height;
      zoomBy(event.deltaY > 0 ? 1.15 : 1 / 1.15, cx, cy);
    });
    svg.addEventListener("pointerdown", (event) => {
      if (event.target.closest && event.target.closest(".node")) return;
      drag = { x: event.clientX, y: event.clientY, zoom: { ...zoom } };
      svg.setPointerCapture(event.pointerId);
    });
    svg.addEventListener("pointermove", (event) => {
      if (!drag) return;
      const box = svg.getBoundingClientRect();
      const scale = Math.max(zoom.width / box.width, zoom.height / box.height);
      zoom = { ...drag.zoom, x: drag.zoom.x - (event.clientX - drag.x) * scale, y: drag.zoom.y - (event.clientY - drag.y) * scale };
      applyZoom();
    });
    svg.addEventListener("pointerup", () => {
      drag = null;
    });
    return svg;
  }

  function neighbourList() {
    const rows = [...edges.values()].map((edge) =>
      h("li", {}, h("code", {}, edge.source), ` —${edge.label}→ `, h("code", {}, edge.target)),
    );
    return h("details", { class: "graph-list" }, h("summary", {}, `The ${edges.size} relations as a list`), h("ul", {}, rows));
  }

  function render() {
    if (nodes.size <= 1 && edges.size === 0) {
      view.show(
        emptyState(
          `Nothing connected to “${root}”`,
          "The graph is built from facts that name things (a project's framework, database, cache). Try a project name, another direction, or more hops.",
        ),
      );
      return;
    }
    const controls = h(
      "div",
      { class: "graph-controls" },
      h("button", { type: "button", class: "button-quiet", "aria-label": "Zoom in", on: { click: () => zoomBy(1 / 1.3) } }, "+"),
      h("button", { type: "button", class: "button-quiet", "aria-label": "Zoom out", on: { click: () => zoomBy(1.3) } }, "−"),
      h("button", { type: "button", class: "button-quiet", on: { click: () => { zoom = { ...fitted }; applyZoom(); } } }, "Fit"),
      h("span", { class: "muted" }, `${nodes.size} entities · ${edges.size} relations · drag to pan, wheel to zoom`),
    );
    view.show(controls, h("div", { class: "graph-frame" }, drawing()), neighbourList());
  }

  async function expandNode(id) {
    const node = nodes.get(id);
    const answer = await guarded(view, null, () =>
      ctx.api.get("graph/neighbors", { entity: id, depth: 1, direction: direction.value, user_id: ctx.selection.user }),
    );
    if (answer === null) return;
    addNeighbours(answer, id, node ? node.depth : 1);
    const known = positions;
    positions = layout([...nodes.values()], [...edges.values()], known);
    fit();
    render();
    const again = view.body.querySelector(`.node[data-entity="${CSS.escape(id)}"]`);
    if (again) again.focus();
  }

  async function load() {
    const start = entity.value.trim() || ctx.selection.project || "";
    if (!start) {
      view.show(emptyState("Which entity?", "Type an entity to start from — a project name such as the one you chose above — and press Show."));
      return;
    }
    entity.value = start;
    view.loading("the graph");
    const answer = await guarded(view, "graph", () =>
      ctx.api.get("graph/neighbors", { entity: start, depth: depth.value, direction: direction.value, user_id: ctx.selection.user }),
    );
    if (answer === null) return;
    nodes.clear();
    edges.clear();
    root = shown(answer.entity || start);
    addNeighbours(answer, root, 0);
    nodes.get(root).depth = 0;
    // Past a few dozen relations their labels hide the graph: off, unless the person chose.
    if (!labelsChosen) labels.checked = edges.size <= 60;
    positions = layout([...nodes.values()], [...edges.values()]);
    fit();
    render();
  }

  let labelsChosen = false;
  labels.addEventListener("change", () => {
    labelsChosen = true;
    if (nodes.size) render();
  });

  return {
    id: "graph",
    label: "Graph",
    node: view.node,
    refresh: () => {
      // The chosen project is the natural start, unless the person typed another entity.
      if (!entity.value || entity.value === filled) entity.value = ctx.selection.project || "";
      filled = entity.value;
      load();
    },
  };
}
