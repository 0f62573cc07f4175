import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { keys } from './queries';

export type LiveState = 'connecting' | 'live' | 'reconnecting';

/** What GET /orgs/:org/events sends (server: features/events): ledger row ids, or action ids for approvals; null = too many. */
interface Change {
  ids: string[] | null;
}

/** Refetches at most this often per query, however fast changes arrive. */
const COALESCE_MS = 250;

/**
 * Keeps the org's ledger and approvals current from the server's event stream: each change
 * invalidates the queries it touches, so whatever is on screen refetches; a reconnect resumes with
 * Last-Event-ID (EventSource does it), and a `resync` (events were missed) refetches everything.
 */
export function useOrgEvents(org: string): LiveState {
  const queryClient = useQueryClient();
  const [state, setState] = useState<LiveState>('connecting');
  useEffect(() => {
    const due = new Map<string, readonly unknown[]>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const invalidate = (...queryKeys: (readonly unknown[])[]) => {
      for (const key of queryKeys) due.set(JSON.stringify(key), key);
      timer ??= setTimeout(() => {
        timer = undefined;
        const batch = [...due.values()];
        due.clear();
        // An in-flight fetch is kept, not cancelled: under a burst of events each query still settles.
        for (const queryKey of batch) void queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false });
      }, COALESCE_MS);
    };
    const source = new EventSource(`/orgs/${encodeURIComponent(org)}/events`);
    source.onopen = () => setState('live');
    source.onerror = () => setState('reconnecting');
    const rows = (event: MessageEvent<string>) => {
      const { ids } = JSON.parse(event.data) as Change;
      return ids ? ids.map((id) => keys.ledgerRow(org, id)) : [keys.org(org)];
    };
    source.addEventListener('ledger', (event) => invalidate(keys.ledger(org), ...rows(event)));
    source.addEventListener('approval', (event) => invalidate(keys.approvals(org), keys.ledger(org), ...rows(event)));
    source.addEventListener('resync', () => invalidate(keys.org(org)));
    return () => {
      clearTimeout(timer);
      source.close();
    };
  }, [org, queryClient]);
  return state;
}
