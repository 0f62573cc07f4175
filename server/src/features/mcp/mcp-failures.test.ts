import {
  IssuerMismatchError,
  OAuthError,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../lib/errors.ts';
import { OutboundRefused } from '../../lib/address-guard.ts';
import { ResponseTooLarge } from '../../lib/guarded-fetch.ts';
import { mcpFailure } from './mcp-client.ts';
import { callFailure } from './mcp-tools.ts';

/** A network error as undici gives it: `fetch failed`, with the system's error as its cause. */
const network = (code: string, message = `connect ${code} 127.0.0.1:1`) =>
  new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });

describe('mcpFailure', () => {
  it.each([
    ['our own refused credentials, as they are', new AppError('mcp_unauthorized', 'refused'), 'mcp_unauthorized'],
    ['our own unreachable server, as it is', new AppError('mcp_unreachable', 'down'), 'mcp_unreachable'],
    ["the SDK's UnauthorizedError", new UnauthorizedError('no'), 'mcp_unauthorized'],
    ['an HTTP 401', new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, '401', { status: 401 }), 'mcp_unauthorized'],
    ['an HTTP 403', new SdkHttpError(SdkErrorCode.ClientHttpForbidden, '403', { status: 403 }), 'mcp_unauthorized'],
    ['an authentication code without a status', new SdkError(SdkErrorCode.ClientHttpAuthentication, 'auth'), 'mcp_unauthorized'],
    [
      'an authorization server that refused the client',
      new Error('token', { cause: new OAuthError('invalid_client', 'bad') }),
      'mcp_unauthorized',
    ],
    [
      'an issuer other than the pinned one',
      new IssuerMismatchError('metadata', 'https://a.example', 'https://b.example'),
      'mcp_unauthorized',
    ],
    ['a refused connection', network('ECONNREFUSED'), 'mcp_unreachable'],
    ['a name that does not resolve', network('ENOTFOUND', 'getaddrinfo ENOTFOUND x.invalid'), 'mcp_unreachable'],
    ['a connection reset', network('ECONNRESET', 'read ECONNRESET'), 'mcp_unreachable'],
    ['an undici socket error', network('UND_ERR_SOCKET', 'other side closed'), 'mcp_unreachable'],
    ['our address guard', new OutboundRefused('10.0.0.1 is not a public address'), 'mcp_unreachable'],
    ['a request timeout', new SdkError(SdkErrorCode.RequestTimeout, 'timed out'), 'mcp_unreachable'],
    ['a connect timeout', Object.assign(new Error('connect timeout'), { name: 'ConnectTimeoutError' }), 'mcp_unreachable'],
    ['an HTTP 500', new SdkHttpError(SdkErrorCode.ClientHttpUnexpectedContent, '500', { status: 500 }), 'mcp_protocol'],
    ['an unreadable answer', new SyntaxError('Unexpected token < in JSON'), 'mcp_protocol'],
    ['an answer too large to read', new ResponseTooLarge(1000), 'mcp_protocol'],
    ['anything else', new Error('odd'), 'mcp_protocol'],
  ])('%s', (_name, error, failure) => {
    expect(mcpFailure(error)).toBe(failure);
  });
});

describe('callFailure: what the model and the ledger are told', () => {
  const mayHave = /; it may or may not have done it$/;
  it.each([
    ['a timeout: it may have been done', new SdkError(SdkErrorCode.RequestTimeout, 't'), /did not answer within 2 s/, true],
    [
      'a JSON-RPC error: refused, not done',
      new ProtocolError(-32602, 'Tool x not found'),
      /refused the call: .*Tool x not found/,
      false,
    ],
    ['an answer over the bound', new ResponseTooLarge(16), /answered with more than 16 bytes, which were not read/, true],
    ['a session that could not be opened', new AppError('mcp_unreachable', 'down'), /"erp" could not be reached: down/, false],
    ['credentials refused when opening', new AppError('mcp_unauthorized', 'no'), /"erp" refused the credentials: no/, false],
    [
      'credentials refused on the call',
      new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, '401', { status: 401 }),
      /refused the credentials/,
      false,
    ],
    ['a refused connection: never sent', network('ECONNREFUSED'), /"erp" could not be reached: .*ECONNREFUSED/, false],
    ['our guard: never sent', new OutboundRefused('10.0.0.1 is not a public address'), /could not be reached/, false],
    [
      'a connection lost after sending',
      network('ECONNRESET', 'read ECONNRESET'),
      /connection to the MCP server "erp" failed before it answered/,
      true,
    ],
    [
      'an answer nested too deeply',
      new RangeError('Maximum call stack size exceeded'),
      /answer could not be read \(it is nested too deeply\)/,
      true,
    ],
    [
      'an answer that is not JSON',
      new SyntaxError('Unexpected end of JSON input'),
      /answer could not be read \(Unexpected end/,
      true,
    ],
  ])('%s', (_name, error, words, mayHaveDone) => {
    const said = callFailure(error, 'erp', 2000);
    expect(said).toMatch(words);
    if (mayHaveDone) expect(said).toMatch(mayHave);
    else expect(said).not.toMatch(/may or may not/);
  });
});
