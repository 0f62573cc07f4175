import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/** A log call's arguments as pino takes them: an object or a message, then the message and its values. */
type LogArgs = [obj: unknown, msg?: string, ...values: unknown[]];

/**
 * A request's logger whose pino child (the request's id bound, the route's level and serializers
 * applied) is made when it first writes a line. Fastify makes a child for every request; when
 * requests are logged below LOG_LEVEL (warn and above, and the probes' routes at any level) most never
 * write, and making one (its bindings serialized through the redaction paths) was about 6% of the
 * instructions of a cached session check under callgrind (docs/benchmarks.md).
 */
class DeferredRequestLogger implements FastifyBaseLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #logger(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  /** As the child would answer: the route's level if it has one, else the parent's now. */
  #enabled(level: Level): boolean {
    if (this.#child) return this.#child.isLevelEnabled(level);
    const { values } = this.#parent.levels;
    return (values[level] ?? 0) >= (values[this.#options.level ?? this.#parent.level] ?? Number.POSITIVE_INFINITY);
  }

  #write(level: Level, args: LogArgs): void {
    if (this.#enabled(level)) this.#logger()[level](...args);
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  fatal(...args: LogArgs): void {
    this.#write('fatal', args);
  }

  error(...args: LogArgs): void {
    this.#write('error', args);
  }

  warn(...args: LogArgs): void {
    this.#write('warn', args);
  }

  info(...args: LogArgs): void {
    this.#write('info', args);
  }

  debug(...args: LogArgs): void {
    this.#write('debug', args);
  }

  trace(...args: LogArgs): void {
    this.#write('trace', args);
  }

  silent(): void {}

  // pino's own members beside Fastify's interface, for a caller that treats `request.log` as pino's.
  isLevelEnabled(level: string): boolean {
    return this.#enabled(level as Level);
  }

  bindings(): Bindings {
    return this.#logger().bindings();
  }

  /** The child writes to its parent's stream: flushing the parent flushes the request's lines. */
  flush(callback?: (error?: Error) => void): void {
    this.#parent.flush(callback);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, its pino child made on its first line. */
export const deferredRequestLogger =
  (parent: Logger) =>
  (_server: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger =>
    new DeferredRequestLogger(parent, bindings, options);
