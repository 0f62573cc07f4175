import { randomUUID } from 'node:crypto';
import { sendJson, startLoopbackServer } from './http.ts';

/** The request body of an OpenAI-compatible chat completion, as the provider sent it. */
export interface ChatRequest {
  model: string;
  messages: Array<{
    role: string;
    content: string | null;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters: Record<string, any> } }>;
}

/** The usage the provider reports for an answer (default: 10 prompt tokens, 5 completion tokens). */
export interface ScriptedUsage {
  prompt: number;
  completion: number;
  /** Of the prompt tokens, those read from the prompt cache (prompt_tokens_details.cached_tokens). */
  cached?: number;
}
export type ScriptedReply =
  | { text: string; delayMs?: number; usage?: ScriptedUsage }
  | {
      toolCalls: Array<{ name: string; arguments: unknown; id?: string }>;
      text?: string;
      delayMs?: number;
      usage?: ScriptedUsage;
    }
  | { error: { status: number; message: string }; delayMs?: number };

export type Script = (request: ChatRequest) => ScriptedReply | Promise<ScriptedReply>;

/** The event data the runner put in the first user message. */
export function eventData(request: ChatRequest): Record<string, any> {
  const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const json = first.slice(first.indexOf('Event data (JSON):') + 'Event data (JSON):'.length);
  return JSON.parse(json);
}

/** The tool results the model has seen so far, oldest first (content parsed when JSON). */
export function toolResults(request: ChatRequest): Array<{ toolCallId: string; content: any }> {
  return request.messages
    .filter((message) => message.role === 'tool')
    .map((message) => {
      let content: unknown = message.content;
      try {
        content = JSON.parse(message.content ?? '');
      } catch {
        // plain text (an error or a denial)
      }
      return { toolCallId: message.tool_call_id!, content };
    });
}

/**
 * Plays a model provider that speaks the OpenAI-compatible chat completions API on loopback
 * (POST /v1/chat/completions, non-streaming), answering each request from the test's script:
 * text, tool calls (also with arguments that are not JSON), HTTP errors, slow answers.
 */
export async function startFakeModel(apiKey = 'sk-test-model-key', options: { keepRequests?: boolean } = {}) {
  // A benchmark's requests are counted, not kept: bench:actions makes 270,000, which kept held about
  // 280 MB of its heap by its end.
  const keepRequests = options.keepRequests ?? true;
  const requests: ChatRequest[] = [];
  let requestCount = 0;
  let script: Script = () => ({ text: 'Done.' });
  /** Requests being answered now, and the most there were at once (a test of concurrency checks that runs overlapped). */
  const concurrency = { now: 0, max: 0 };
  const server = await startLoopbackServer(async (request, response, body) => {
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions')
      return sendJson(response, 404, { error: { message: 'not found' } });
    if (request.headers.authorization !== `Bearer ${apiKey}`)
      return sendJson(response, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
    const chat = JSON.parse(body) as ChatRequest;
    requestCount++;
    if (keepRequests) requests.push(chat);
    const reply = await script(chat);
    concurrency.max = Math.max(concurrency.max, ++concurrency.now);
    try {
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    } finally {
      concurrency.now--;
    }
    if (response.destroyed) return;
    if ('error' in reply)
      return sendJson(response, reply.error.status, { error: { message: reply.error.message, type: 'server_error' } });
    const toolCalls = 'toolCalls' in reply ? reply.toolCalls : [];
    const usage = reply.usage ?? { prompt: 10, completion: 5 };
    sendJson(response, 200, {
      id: `chatcmpl-${randomUUID()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: chat.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text ?? null,
            ...(toolCalls.length > 0
              ? {
                  tool_calls: toolCalls.map((call) => ({
                    id: call.id ?? `call_${randomUUID().replaceAll('-', '').slice(0, 20)}`,
                    type: 'function',
                    function: {
                      name: call.name,
                      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
                    },
                  })),
                }
              : {}),
          },
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: {
        prompt_tokens: usage.prompt,
        completion_tokens: usage.completion,
        total_tokens: usage.prompt + usage.completion,
        ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } }),
      },
    });
  });
  return {
    url: server.url,
    apiKey,
    requests,
    /** Every request answered or being answered, kept or not. */
    requestCount: () => requestCount,
    concurrency,
    /** What the model answers from now on. */
    script(next: Script) {
      script = next;
    },
    /** The environment that points the server's default provider at this model. */
    env: {
      MODEL_PROVIDER: 'openai-compatible',
      MODEL_BASE_URL: `${server.url}/v1`,
      MODEL_API_KEY: apiKey,
      MODEL_NAME: 'scripted-model',
    },
    close: server.close,
  };
}

/** Whether the model has been given tool results already. */
export const calledTools = (request: ChatRequest) => request.messages.some((message) => message.role === 'tool');

/** First answer: one generateDocument call with `args`; once it has the result: a closing text. */
export const documentThenText =
  (args: unknown = { title: 'Order 42', content: '# Order 42\n\n| sku | qty |\n|---|---|\n| A-1 | 2 |' }) =>
  (request: ChatRequest) =>
    calledTools(request)
      ? { text: `Made ${JSON.stringify(toolResults(request)[0]!.content)}` }
      : { toolCalls: [{ name: 'generateDocument', arguments: args }] };
