import { describe, expect, it } from 'vitest';
import { deadline } from './deadline.ts';

describe('deadline', () => {
  it('aborts with a TimeoutError when the time is up, and says it expired', async () => {
    const limit = deadline(20);
    const reason = await new Promise((resolve) => limit.signal.addEventListener('abort', () => resolve(limit.signal.reason)));
    expect(reason).toMatchObject({ name: 'TimeoutError' });
    expect(limit.expired).toBe(true);
  });

  it('never aborts once cleared', async () => {
    const limit = deadline(20);
    limit.clear();
    // A later deadline that does fire: by then the cleared one would have fired too.
    const later = deadline(60);
    await new Promise((resolve) => later.signal.addEventListener('abort', resolve));
    expect(limit.signal.aborted).toBe(false);
    expect(limit.expired).toBe(false);
  });
});
