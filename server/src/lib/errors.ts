/**
 * The closed set of error codes the API answers with, each mapped to one HTTP status.
 * Every error body is `{ error: <human message>, code: <one of these> }`.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  validation_failed: 400,
  invalid_json: 400,
  invalid_payload: 400,
  invalid_reset_token: 400,
  oauth_state_mismatch: 400,
  oauth_exchange_failed: 400,
  unknown_auth_provider: 400,
  session_missing: 401,
  session_invalid: 401,
  invalid_credentials: 401,
  invalid_external_token: 401,
  signature_missing: 401,
  timestamp_out_of_tolerance: 401,
  signature_invalid: 401,
  message_replayed: 401,
  admin_required: 403,
  /** The action's rule does not name this person among who may decide its calls. */
  not_an_approver: 403,
  csrf_rejected: 403,
  webhook_disabled: 403,
  origin_blocked: 403,
  ip_blocked: 403,
  not_found: 404,
  provider_not_configured: 404,
  conflict: 409,
  email_in_use: 409,
  not_replayable: 409,
  already_decided: 409,
  email_not_configured: 409,
  domain_not_verified: 422,
  /** Arguments a person approved that the action rule's argument rules refuse. */
  arguments_denied: 422,
  /** An MCP server could not be reached, refused our credentials, or did not speak MCP (its own words in the message). */
  mcp_unreachable: 422,
  mcp_unauthorized: 422,
  mcp_protocol: 422,
  /** Slack's Web API refused a call: its own error (invalid_auth, channel_not_found, not_in_channel) in the message. */
  slack_refused: 422,
  not_acceptable: 406,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  upstream_unavailable: 502,
  not_ready: 503,
  overloaded: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: unknown; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { error: this.message, code: this.code }
      : { error: this.message, code: this.code, details: this.details };
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

/** The email errors, with the messages clients match on. */
export const emailNotConfigured = () => new AppError('email_not_configured', 'Email integration not configured');
export const domainNotVerified = () => new AppError('domain_not_verified', 'Domain is not verified');
