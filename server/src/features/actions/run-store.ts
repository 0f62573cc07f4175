import { randomUUID } from 'node:crypto';
import type { Insertable, Kysely } from 'kysely';
import type { DB, ToolCallsTable } from '../../db/schema.ts';

type Message = { role: 'user' | 'assistant' | 'tool'; content: unknown };

/**
 * The runner's writes, each one statement (data-modifying CTEs), so that a run costs few round
 * trips. (thread, seq) is unique: two runners that somehow both continue one conversation cannot
 * both write its next step; the second fails.
 */
export const runStore = {
  /** The action's conversation: the thread (owned by the run-as user), its first message, the link. */
  openThread: (db: Kysely<DB>, thread: { id: string; orgId: string; userId: string; title: string; actionId: string; first: Message }) =>
    db
      .with('thread', (qb) =>
        qb
          .insertInto('threads')
          .values({ id: thread.id, orgId: thread.orgId, userId: thread.userId, channel: 'webhook', title: thread.title }),
      )
      .with('message', (qb) => qb.insertInto('threadMessages').values(messageRow(thread.id, 0, thread.first, thread.actionId)))
      .updateTable('actions')
      .set({ threadId: thread.id })
      .where('id', '=', thread.actionId)
      .execute(),

  /** A model step: the assistant's message and the tool calls it proposed, as decided. */
  appendStep: (
    db: Kysely<DB>,
    step: { threadId: string; seq: number; actionId: string; message: Message; toolCalls: Insertable<ToolCallsTable>[] },
  ) => {
    const message = messageRow(step.threadId, step.seq, step.message, step.actionId);
    if (step.toolCalls.length === 0) return db.insertInto('threadMessages').values(message).execute();
    return db
      .with('message', (qb) => qb.insertInto('threadMessages').values(message))
      .insertInto('toolCalls')
      .values(step.toolCalls)
      .execute();
  },

  appendMessage: (db: Kysely<DB>, threadId: string, seq: number, message: Message, actionId: string) =>
    db
      .insertInto('threadMessages')
      .values(messageRow(threadId, seq, message, actionId))
      .execute(),

  /** A finished call's result; with `message`, the step's tool results go in the same statement. */
  finishCall: (
    db: Kysely<DB>,
    call: { id: string; status: 'completed' | 'failed'; output: unknown },
    completedAt: Date,
    message?: { threadId: string; seq: number; message: Message; actionId: string },
  ) => {
    const finished = db
      .updateTable('toolCalls')
      .set({ status: call.status, output: JSON.stringify(call.output), completedAt })
      .where('id', '=', call.id)
      .where('status', '=', 'ready');
    if (!message) return finished.execute();
    return db
      .with('finished', () => finished)
      .insertInto('threadMessages')
      .values(messageRow(message.threadId, message.seq, message.message, message.actionId))
      .execute();
  },
};

export function messageRow(threadId: string, seq: number, message: Message, actionId: string) {
  return { id: randomUUID(), threadId, seq, role: message.role, content: JSON.stringify(message.content), actionId };
}
