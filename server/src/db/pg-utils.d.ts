// node-postgres's parameter serialization, which the PGlite query shares (its package has no types for it).
declare module 'pg/lib/utils.js' {
  /** A parameter as node-postgres sends it: text, or a Buffer sent as binary; null for null and undefined. */
  function prepareValue(value: unknown): string | Buffer | null;
  const utils: { prepareValue: typeof prepareValue };
  export default utils;
}
