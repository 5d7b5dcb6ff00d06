/** Polls `check` until it returns a value other than undefined; fails after a generous deadline. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, deadlineMs = 60_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls `condition` until it holds; the deadline only bounds a broken run. */
export async function until(
  what: string,
  condition: () => boolean | Promise<boolean>,
  deadlineMs = 60_000,
): Promise<void> {
  await waitFor(what, async () => ((await condition()) ? true : undefined), deadlineMs);
}
