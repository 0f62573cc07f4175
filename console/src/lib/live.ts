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
 * Opening the stream refetches what is on screen too: a change between a page's first read and the
 * stream's start reaches no stream.
 */
export function useOrgEvents(org: string): LiveState {
  const queryClient = useQueryClient();
  const [state, setState] = useState<LiveState>('connecting');
  useEffect(() => {
    const due = new Map<string, readonly unknown[]>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      timer = undefined;
      for (const [id, queryKey] of due) {
        // A fetch in flight may have read before the change, and its answer would be taken as
        // current: the query refetches once it has settled. (Not cancelled: under a burst of
        // events each query still settles.)
        if (queryClient.isFetching({ queryKey }) > 0) continue;
        due.delete(id);
        void queryClient.invalidateQueries({ queryKey });
      }
      if (due.size > 0) timer = setTimeout(flush, COALESCE_MS);
    };
    const invalidate = (...queryKeys: (readonly unknown[])[]) => {
      for (const key of queryKeys) due.set(JSON.stringify(key), key);
      timer ??= setTimeout(flush, COALESCE_MS);
    };
    const source = new EventSource(`/orgs/${encodeURIComponent(org)}/events`);
    source.onopen = () => {
      setState('live');
      invalidate(keys.org(org));
    };
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
