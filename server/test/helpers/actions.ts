import type { TestApp } from './test-app.ts';

/** Polls the ledger row of an action until its status is one of `statuses`; returns the row. */
export async function waitForAction(app: TestApp, auth: { token: string; org: string }, actionId: string, statuses: string[], timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    const response = await app.request('GET', `/orgs/${auth.org}/ledger/${actionId}`, { token: auth.token });
    last = await response.json();
    if (statuses.includes(last.status)) return last;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`Action ${actionId} did not reach ${statuses.join('|')} within ${timeoutMs} ms; last: ${JSON.stringify(last?.status)} ${JSON.stringify(last?.execution?.error ?? '')}`);
}
