/** Says plainly, at the start and at the end of the run, when the PostgreSQL pass did not run. */
export default function setup() {
  const skipped = process.env.POSTGRES_PASS_SKIPPED;
  const say = () => {
    if (skipped) process.stderr.write(`\n*** PostgreSQL pass SKIPPED: ${skipped}. Tests ran on PGlite only. ***\n\n`);
  };
  say();
  return say;
}
