const ORG_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** What is wrong with an org slug, if anything (the CLI checks before it opens the database). */
export function orgSlugProblem(slug: string): string | undefined {
  return ORG_SLUG_PATTERN.test(slug)
    ? undefined
    : 'slug must be 1-63 lowercase letters, digits or dashes, starting with a letter or digit';
}
