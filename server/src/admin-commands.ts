import { parseArgs } from 'node:util';
import type { Container } from './container.ts';
import { AppError } from './lib/errors.ts';
import { orgSlugProblem } from './features/orgs/org-slug.ts';

export class UsageError extends Error {}

type Values = Record<string, string | undefined>;

function required(values: Values, ...names: string[]): string[] {
  const missing = names.filter((name) => !values[name]);
  if (missing.length) throw new UsageError(`Missing ${missing.map((name) => `--${name}`).join(', ')}`);
  return names.map((name) => values[name]!);
}

export type AdminCommand =
  | { kind: 'orgs create'; slug: string; name: string }
  | { kind: 'orgs add-member'; org: string; email: string }
  | {
      kind: 'users create';
      email: string;
      password: string;
      role: 'Admin' | 'Guest';
      org?: string;
      username?: string;
      firstName: string | null;
      lastName: string | null;
    }
  | { kind: 'users set-password'; email: string; password: string };

/** An admin command's arguments, checked before anything opens the database; a UsageError says what is wrong. */
export function parseAdminCommand(args: string[]): AdminCommand {
  const [group, action, ...rest] = args;
  const options = {
    slug: { type: 'string' },
    name: { type: 'string' },
    org: { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    role: { type: 'string' },
    username: { type: 'string' },
    'first-name': { type: 'string' },
    'last-name': { type: 'string' },
  } as const;
  let values: Values;
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as Values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  switch (`${group} ${action}`) {
    case 'orgs create': {
      const [slug, name] = required(values, 'slug', 'name');
      const problem = orgSlugProblem(slug!);
      if (problem) throw new UsageError(problem);
      return { kind: 'orgs create', slug: slug!, name: name! };
    }
    case 'orgs add-member': {
      const [org, email] = required(values, 'org', 'email');
      return { kind: 'orgs add-member', org: org!, email: email! };
    }
    case 'users create': {
      const [email, password, role] = required(values, 'email', 'password', 'role');
      if (role !== 'Admin' && role !== 'Guest') throw new UsageError('--role must be Admin or Guest');
      return {
        kind: 'users create',
        email: email!,
        password: password!,
        role,
        org: values.org,
        username: values.username,
        firstName: values['first-name'] ?? null,
        lastName: values['last-name'] ?? null,
      };
    }
    case 'users set-password': {
      const [email, password] = required(values, 'email', 'password');
      return { kind: 'users set-password', email: email!, password: password! };
    }
    default:
      throw new UsageError(`Unknown command: ${args.slice(0, 2).join(' ') || '(none)'}`);
  }
}

/** Admin commands, run on the services of a running server's container, or of this process (composition/admin.ts). */
export async function runAdminCommand(
  { orgs, users }: Pick<Container['services'], 'orgs' | 'users'>,
  args: string[],
): Promise<string> {
  const command = parseAdminCommand(args);
  switch (command.kind) {
    case 'orgs create': {
      const org = await orgs.create(command.slug, command.name);
      return `Created organization ${org.slug} (${org.id})`;
    }
    case 'orgs add-member':
      await orgs.addMember(command.org, command.email);
      return `Added ${command.email} to ${command.org}`;
    case 'users create': {
      // Check the org first, so a typo does not leave a user created outside it.
      if (command.org && !(await orgs.find(command.org))) throw new AppError('not_found', `No organization ${command.org}`);
      const user = await users.create({
        email: command.email,
        password: command.password,
        role: command.role,
        provider: 'credentials',
        username: command.username,
        firstName: command.firstName,
        lastName: command.lastName,
      });
      if (command.org) await orgs.addMember(command.org, user.email);
      return `Created ${command.role} ${user.email} (${user.id})${command.org ? ` in ${command.org}` : ''}`;
    }
    case 'users set-password': {
      const user = await users.findByEmail(command.email);
      if (!user) throw new AppError('not_found', `No user with email ${command.email}`);
      await users.setPassword(user.id, command.password);
      return `Password set for ${user.email}`;
    }
  }
}
