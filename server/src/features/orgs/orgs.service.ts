import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, OrganizationRow } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { usersRepo } from '../users/users.repo.ts';
import { orgSlugProblem } from './org-slug.ts';
import { orgsRepo } from './orgs.repo.ts';

export function createOrgsService(deps: { db: Kysely<DB> }) {
  return {
    async create(slug: string, name: string): Promise<OrganizationRow> {
      const problem = orgSlugProblem(slug);
      if (problem) throw new AppError('validation_failed', problem);
      try {
        return await orgsRepo.insert(deps.db, { id: randomUUID(), slug, name });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('conflict', `An organization with slug "${slug}" already exists`);
        throw error;
      }
    },

    async addMember(orgSlugOrId: string, email: string): Promise<void> {
      const org = await orgsRepo.findBySlugOrId(deps.db, orgSlugOrId);
      if (!org) throw notFound('Organization');
      const user = await usersRepo.findByEmail(deps.db, email);
      if (!user) throw notFound('User');
      await orgsRepo.addMember(deps.db, org.id, user.id);
    },

    /**
     * Every org-scoped route starts here: the org by slug or ID if the user is a member, else 404,
     * the same answer as for an org that does not exist.
     */
    async requireMembership(orgSlugOrId: string, userId: string): Promise<OrganizationRow> {
      const org = await orgsRepo.findForMember(deps.db, orgSlugOrId, userId);
      if (!org) throw notFound('Organization');
      return org;
    },

    find: (orgSlugOrId: string) => orgsRepo.findBySlugOrId(deps.db, orgSlugOrId),

    oldest: () => orgsRepo.oldest(deps.db),

    listForUser: (userId: string) => orgsRepo.listForUser(deps.db, userId),

    async listMembers(orgSlugOrId: string, userId: string) {
      const org = await this.requireMembership(orgSlugOrId, userId);
      return orgsRepo.listMembers(deps.db, org.id);
    },
  };
}

export type OrgsService = ReturnType<typeof createOrgsService>;
