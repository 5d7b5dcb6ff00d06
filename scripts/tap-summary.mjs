// Reads the TAP that node's test runner writes and answers what the test runner script needs: every test with its
// ancestors' names, whether it passed, was skipped (and why) or was a todo, and whether it is a leaf.

const OK_LINE = /^(\s*)(not )?ok \d+ - (.*?)(?: # (SKIP|TODO)\b ?(.*))?$/;
const SUBTEST_LINE = /^(\s*)# Subtest: (.*)$/;

/** Every test of one TAP text, parents after their children (as the runner prints them). */
export function parseTap(text) {
  const tests = [];
  const open = [];
  for (const line of text.split('\n')) {
    const sub = SUBTEST_LINE.exec(line);
    if (sub) {
      const indent = sub[1].length;
      const parent = open[open.length - 1];
      if (parent && parent.indent < indent) parent.children = true;
      open.push({ indent, name: unescape(sub[2]), children: false });
      continue;
    }
    const m = OK_LINE.exec(line);
    if (!m) continue;
    const indent = m[1].length;
    const name = unescape(m[3]);
    let self = open[open.length - 1];
    if (self && self.indent === indent) open.pop();
    else {
      self = { indent, name, children: false };
      const parent = open[open.length - 1];
      if (parent && parent.indent < indent) parent.children = true;
    }
    tests.push({
      path: [...open.filter((o) => o.indent < indent).map((o) => o.name), name],
      ok: !m[2],
      skip: m[4] === 'SKIP',
      todo: m[4] === 'TODO',
      reason: (m[5] ?? '').trim(),
      leaf: !self.children,
    });
  }
  return tests;
}

function unescape(name) {
  return name.replace(/\\#/g, '#').replace(/\\\\/g, '\\');
}

/** Skipped tests grouped by their reason, largest group first. */
export function summarizeSkips(skipped) {
  const counts = new Map();
  for (const t of skipped)
    counts.set(t.reason || '(no reason given)', (counts.get(t.reason || '(no reason given)') ?? 0) + 1);
  return [...counts].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count);
}

/** The skipped tests whose reason matches none of the allow-list's patterns. */
export function unexpectedSkips(skipped, allowList) {
  const patterns = allowList.map((a) => new RegExp(a.reason));
  return skipped.filter((t) => !patterns.some((p) => p.test(t.reason)));
}
