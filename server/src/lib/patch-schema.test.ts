import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { patchSchema } from './patch-schema.ts';

describe('patchSchema', () => {
  const create = z.object({ name: z.string(), enabled: z.boolean().default(true), limit: z.int().max(10).default(5) });
  const patch = patchSchema(create);

  it('leaves out what the request leaves out (no defaults filled in)', () => {
    expect(patch.parse({ name: 'x' })).toEqual({ name: 'x' });
    expect(patch.parse({ enabled: false })).toEqual({ enabled: false });
  });

  it('still validates the fields that are there, and refuses an empty change', () => {
    expect(patch.safeParse({ limit: 11 }).success).toBe(false);
    expect(patch.safeParse({}).success).toBe(false);
  });

  it("leaves out a field whose default a transform follows (an action rule's notify), and still transforms it", () => {
    const withTransform = patchSchema(
      z.object({
        name: z.string(),
        notify: z
          .array(z.string())
          .default([])
          .transform((channels) => [...new Set(channels)]),
      }),
    );
    expect(withTransform.parse({ name: 'x' })).toEqual({ name: 'x' });
    expect(withTransform.parse({ notify: ['email', 'email'] })).toEqual({ notify: ['email'] });
  });
});
