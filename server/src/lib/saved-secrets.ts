import { AppError } from './errors.ts';

/**
 * An integration's input with its saved secrets where the input leaves them out, so that a change of
 * its other settings does not ask for them again (a provider may show a key only once). `saved` reads
 * the secrets as saved (decrypted), or nothing when none is: then a secret left out is 400, named.
 */
export async function withSavedSecrets<Name extends string, Input extends Partial<Record<Name, string>>>(
  input: Input,
  names: readonly Name[],
  saved: () => Promise<Record<Name, string> | undefined>,
  nothingSaved: string,
): Promise<Input & Record<Name, string>> {
  const missing = names.filter((name) => input[name] === undefined);
  if (missing.length === 0) return input as Input & Record<Name, string>;
  const secrets = await saved();
  if (!secrets) throw new AppError('validation_failed', `body/${missing[0]}: required: ${nothingSaved} to keep it from`);
  return { ...input, ...Object.fromEntries(missing.map((name) => [name, secrets[name]])) } as Input & Record<Name, string>;
}
