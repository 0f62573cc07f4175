import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];

/** An answer of the API that is not 2xx, with the body's machine-readable code. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Same origin: the session cookie authenticates every call, and the CSRF check sees our Origin. */
export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });

/** The data of an openapi-fetch result, or an ApiError carrying the server's code and message. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { code?: string; error?: string };
  throw new ApiError(response.status, body.code ?? 'error', body.error ?? `The server answered ${response.status}`);
}

export const isNotFound = (error: unknown) => error instanceof ApiError && error.status === 404;
export const isUnauthorized = (error: unknown) => error instanceof ApiError && error.status === 401;

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
/** The JSON body of an operation's 200 answer. */
export type Answer<Path extends keyof paths, Method extends 'get' | 'post' | 'put' | 'patch'> = JsonOf<
  paths[Path][Method] extends { responses: { 200: infer Ok } } ? Ok : never
>;

export type LedgerEntry = Answer<'/orgs/{org}/ledger/{id}', 'get'>;
export type ToolCall = NonNullable<LedgerEntry['execution']>['toolCalls'][number];
export type CallbackDelivery = LedgerEntry['callbacks'][number];
export type ConversationMessage = NonNullable<LedgerEntry['execution']>['conversation'][number];
