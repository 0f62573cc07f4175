import { create } from 'content-disposition';

/**
 * What a saved file's name must not carry: control characters, invisible format characters (a
 * right-to-left override shows "invoice\u202Efdp.exe" as "invoiceexe.pdf"; zero-width ones hide
 * a difference), line and paragraph separators, and path separators.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\]/gu;
/** Longest name kept, in characters (not UTF-16 units, so that no surrogate pair is cut in half). */
const MAX_CHARACTERS = 120;

/**
 * The Content-Disposition of a download named after text that others chose (a model's title, an
 * email sender's filename): RFC 6266's `filename` for old clients (ASCII) and `filename*` in UTF-8
 * (content-disposition), so that "Rapport d'activité.pdf" is saved as such, with nothing a name
 * could use to deceive. The extension is kept when the name is cut.
 */
export function attachmentDisposition(name: string, fallback = 'download'): string {
  const safe = name.toWellFormed().replace(UNSAFE, '_').trim();
  const characters = Array.from(safe);
  const extension = /\.[\p{L}\p{N}]{1,8}$/u.exec(safe)?.[0] ?? '';
  const kept =
    characters.length <= MAX_CHARACTERS
      ? safe
      : `${characters
          .slice(0, MAX_CHARACTERS - extension.length)
          .join('')
          .trimEnd()}${extension}`;
  return create(kept || fallback, { type: 'attachment' });
}
