import { AppError } from './errors.ts';

/** An integration's input completed with its saved secrets, and which of them were kept (as stored). */
export interface WithSavedSecrets<Name extends string, Input> {
  input: Input & Record<Name, string>;
  /**
   * The kept secrets' stored ciphertexts: written back as they are, and only over the row they were read
   * from (a removal or a new secret saved meanwhile is not undone by this write).
   */
  kept: Partial<Record<Name, string>>;
}

/**
 * An integration's input with its saved secrets where the input leaves them out, so that a change of
 * its other settings does not ask for them again (a provider may show a key only once). `saved` reads
 * the secrets as stored (encrypted), or nothing when none is: then a secret left out is 400, named.
 * Only the kept secrets are opened.
 */
export async function withSavedSecrets<Name extends string, Input extends Partial<Record<Name, string>>>(
  input: Input,
  names: readonly Name[],
  saved: () => Promise<Record<Name, string> | undefined>,
  open: (ciphertext: string) => string,
  nothingSaved: string,
): Promise<WithSavedSecrets<Name, Input>> {
  const missing = names.filter((name) => input[name] === undefined);
  if (missing.length === 0) return { input: input as Input & Record<Name, string>, kept: {} };
  const stored = await saved();
  if (!stored) throw new AppError('validation_failed', `body/${missing[0]}: required: ${nothingSaved} to keep it from`);
  const kept = Object.fromEntries(missing.map((name) => [name, stored[name]])) as Record<Name, string>;
  const opened = Object.fromEntries(missing.map((name) => [name, open(kept[name])]));
  return { input: { ...input, ...opened } as Input & Record<Name, string>, kept };
}

/** The write of an integration that kept saved secrets found them removed or replaced since they were read. */
export const savedSecretsChanged = (what: string) =>
  new AppError(
    'conflict',
    `The ${what} was removed or its secrets replaced while this change was saved: nothing was saved; send it again`,
  );
