import { useParams } from '@tanstack/react-router';

/** The org slug of the current URL (every page under /o/$org has one). */
export function useOrgSlug(): string {
  const { org } = useParams({ strict: false });
  if (!org) throw new Error('useOrgSlug outside /o/$org');
  return org;
}
