import { eventually } from './eventually.ts';
import type { TestApp } from './test-app.ts';

/** Polls the ledger row of an action until its status is one of `statuses`; returns the row. */
export async function waitForAction(
  app: TestApp,
  auth: { token: string; org: string },
  actionId: string,
  statuses: string[],
  timeoutMs = 15_000,
): Promise<any> {
  let last: any;
  try {
    return await eventually(
      `action ${actionId} to reach ${statuses.join('|')}`,
      async () => {
        last = await (await app.request('GET', `/orgs/${auth.org}/ledger/${actionId}`, { token: auth.token })).json();
        return statuses.includes(last.status) ? last : undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; last: ${JSON.stringify(last?.status)} ${JSON.stringify(last?.execution?.error ?? '')}`,
    );
  }
}
