export {
  AgentPlatformClient,
  AgentPlatformError,
  type ClientOptions,
  type SendResult,
  type VerificationScheme,
} from './client.js';
export * from './events.js';
export {
  constructEvent,
  verify,
  verifyOrThrow,
  WebhookVerificationError,
  type HeadersLike,
  type VerificationErrorCode,
  type VerifyOptions,
} from './verify.js';
