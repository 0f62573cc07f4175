import { parseArgs } from 'node:util';
import type { Container } from './container.ts';
import { AppError } from './lib/errors.ts';

export class UsageError extends Error {}

type Values = Record<string, string | undefined>;

function required(values: Values, ...names: string[]): string[] {
  const missing = names.filter((name) => !values[name]);
  if (missing.length) throw new UsageError(`Missing ${missing.map((name) => `--${name}`).join(', ')}`);
  return names.map((name) => values[name]!);
}

/** Admin commands, run against a container: in this process, or inside a running server. */
export async function runAdminCommand(container: Container, args: string[]): Promise<string> {
  const [group, action, ...rest] = args;
  const options = {
    slug: { type: 'string' }, name: { type: 'string' }, org: { type: 'string' }, email: { type: 'string' },
    password: { type: 'string' }, role: { type: 'string' }, username: { type: 'string' },
    'first-name': { type: 'string' }, 'last-name': { type: 'string' },
  } as const;
  let values: Values;
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as Values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { orgs, users } = container.services;
  switch (`${group} ${action}`) {
    case 'orgs create': {
      const [slug, name] = required(values, 'slug', 'name');
      const org = await orgs.create(slug!, name!);
      return `Created organization ${org.slug} (${org.id})`;
    }
    case 'orgs add-member': {
      const [org, email] = required(values, 'org', 'email');
      await orgs.addMember(org!, email!);
      return `Added ${email} to ${org}`;
    }
    case 'users create': {
      const [email, password, role] = required(values, 'email', 'password', 'role');
      if (role !== 'Admin' && role !== 'Guest') throw new UsageError('--role must be Admin or Guest');
      // Check the org first, so a typo does not leave a user created outside it.
      if (values.org && !(await orgs.find(values.org))) throw new AppError('not_found', `No organization ${values.org}`);
      const user = await users.create({
        email: email!, password, role, provider: 'credentials',
        username: values.username, firstName: values['first-name'] ?? null, lastName: values['last-name'] ?? null,
      });
      if (values.org) await orgs.addMember(values.org, user.email);
      return `Created ${role} ${user.email} (${user.id})${values.org ? ` in ${values.org}` : ''}`;
    }
    case 'users set-password': {
      const [email, password] = required(values, 'email', 'password');
      const user = await users.findByEmail(email!);
      if (!user) throw new AppError('not_found', `No user with email ${email}`);
      await users.setPassword(user.id, password!);
      return `Password set for ${user.email}`;
    }
    default:
      throw new UsageError(`Unknown command: ${args.slice(0, 2).join(' ') || '(none)'}`);
  }
}

