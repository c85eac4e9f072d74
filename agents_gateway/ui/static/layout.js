// A small force-directed layout (Fruchterman-Reingold) for the graph view: deterministic (no
// randomness, so the same graph is drawn the same way), O(n²) per step, fine up to a few
// hundred nodes. Positions already known are kept as the starting point, so expanding a node
// moves the rest little.

// The ideal edge length, in SVG units (a label of 12 units stays readable at scale 1): shorter
// for big graphs, so that 200 nodes still fit a screen's width at a readable scale.
export function spacingFor(count) {
  return Math.max(48, Math.min(90, 90 * Math.sqrt(30 / Math.max(1, count))));
}

// nodes: [{id, depth}], edges: [{source, target}], known: Map id -> {x, y}. Returns Map id -> {x, y}.
export function layout(nodes, edges, known = new Map()) {
  const count = nodes.length;
  const positions = new Map();
  if (count === 0) return positions;
  const SPACING = spacingFor(count);
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const xs = new Float64Array(count);
  const ys = new Float64Array(count);
  // Start: known positions; new nodes on rings by depth, or next to a known neighbour.
  const neighbours = nodes.map(() => []);
  for (const edge of edges) {
    const a = index.get(edge.source);
    const b = index.get(edge.target);
    if (a === undefined || b === undefined || a === b) continue;
    neighbours[a].push(b);
    neighbours[b].push(a);
  }
  const byDepth = new Map();
  nodes.forEach((node, i) => {
    const depth = Number.isFinite(node.depth) ? node.depth : 1;
    if (!byDepth.has(depth)) byDepth.set(depth, []);
    byDepth.get(depth).push(i);
  });
  for (const [depth, members] of byDepth) {
    members.forEach((i, k) => {
      const angle = (2 * Math.PI * k) / members.length + depth * 0.7;
      const radius = depth === 0 ? 0 : depth * SPACING * 1.2;
      xs[i] = radius * Math.cos(angle);
      ys[i] = radius * Math.sin(angle);
    });
  }
  const placed = new Uint8Array(count);
  nodes.forEach((node, i) => {
    const at = known.get(node.id);
    if (at) {
      xs[i] = at.x;
      ys[i] = at.y;
      placed[i] = 1;
    }
  });
  nodes.forEach((node, i) => {
    if (placed[i]) return;
    const anchor = neighbours[i].find((j) => placed[j]);
    if (anchor !== undefined) {
      const angle = (i * 2.399963) % (2 * Math.PI); // the golden angle: spread siblings
      xs[i] = xs[anchor] + SPACING * Math.cos(angle);
      ys[i] = ys[anchor] + SPACING * Math.sin(angle);
    }
  });

  const k = SPACING;
  const steps = Math.max(60, Math.min(300, Math.round(30000 / count)));
  let temperature = SPACING * (known.size ? 0.6 : 2);
  const cooling = temperature / (steps + 1);
  const dx = new Float64Array(count);
  const dy = new Float64Array(count);
  for (let step = 0; step < steps; step += 1) {
    dx.fill(0);
    dy.fill(0);
    for (let i = 0; i < count; i += 1) {
      for (let j = i + 1; j < count; j += 1) {
        let ddx = xs[i] - xs[j];
        let ddy = ys[i] - ys[j];
        let distance = Math.hypot(ddx, ddy);
        if (distance < 0.01) {
          // Two nodes on one spot: push them apart along a fixed direction.
          ddx = 0.01 * ((i % 7) + 1);
          ddy = 0.01 * ((j % 5) + 1);
          distance = Math.hypot(ddx, ddy);
        }
        const force = (k * k) / distance;
        dx[i] += (ddx / distance) * force;
        dy[i] += (ddy / distance) * force;
        dx[j] -= (ddx / distance) * force;
        dy[j] -= (ddy / distance) * force;
      }
    }
    for (let i = 0; i < count; i += 1) {
      for (const j of neighbours[i]) {
        if (j < i) continue;
        const ddx = xs[i] - xs[j];
        const ddy = ys[i] - ys[j];
        const distance = Math.max(0.01, Math.hypot(ddx, ddy));
        const force = (distance * distance) / k;
        dx[i] -= (ddx / distance) * force;
        dy[i] -= (ddy / distance) * force;
        dx[j] += (ddx / distance) * force;
        dy[j] += (ddy / distance) * force;
      }
      // A weak pull to the centre keeps unconnected parts on screen.
      dx[i] -= xs[i] * 0.01;
      dy[i] -= ys[i] * 0.01;
    }
    for (let i = 0; i < count; i += 1) {
      const length = Math.hypot(dx[i], dy[i]);
      if (length === 0) continue;
      const move = Math.min(length, temperature);
      xs[i] += (dx[i] / length) * move;
      ys[i] += (dy[i] / length) * move;
    }
    temperature = Math.max(1, temperature - cooling);
  }
  nodes.forEach((node, i) => positions.set(node.id, { x: xs[i], y: ys[i] }));
  return positions;
}

// "subject -predicate-> object" (a hop of a neighbour's path) as an edge, or null.
export function parseHop(hop) {
  if (typeof hop !== "string") return null;
  const match = /^(.+?) -(\S+?)-> (.+)$/.exec(hop);
  if (!match) return null;
  return { source: match[1], label: match[2], target: match[3] };
}
