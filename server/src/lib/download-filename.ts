import { create } from 'content-disposition';

/**
 * What a saved file's name must not carry: control characters, invisible format characters (a
 * right-to-left override shows "invoice\u202Efdp.exe" as "invoiceexe.pdf"; zero-width ones hide
 * a difference), line and paragraph separators, path separators and the other characters Windows
 * refuses in a name.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\:*?"<>|]/gu;
/** Longest name kept, in characters (not UTF-16 units, so that no surrogate pair is cut in half). */
const MAX_CHARACTERS = 120;

/**
 * A file name made from text that others chose (a model's title, an email sender's filename), safe to
 * save and to show: nothing a name could deceive or escape with, at most MAX_CHARACTERS, its
 * extension kept when it is cut.
 */
function safeFileName(name: string, fallback: string): string {
  const safe = name.toWellFormed().replace(UNSAFE, '_').trim();
  const characters = Array.from(safe);
  if (characters.length > MAX_CHARACTERS) {
    const extension = /\.[\p{L}\p{N}]{1,8}$/u.exec(safe)?.[0] ?? '';
    return `${characters
      .slice(0, MAX_CHARACTERS - extension.length)
      .join('')
      .trimEnd()}${extension}`;
  }
  return safe || fallback;
}

/** A PDF's file name from its document's title (a download, an email's attachment). */
export const pdfFileName = (title: string) => safeFileName(`${title.trim() || 'document'}.pdf`, 'document.pdf');

/**
 * The Content-Disposition of a download: `filename*` in UTF-8 (RFC 6266, by content-disposition), so
 * that "Rapport d'activité.pdf" is saved as such, and `filename` in ASCII for clients that read only
 * that one (curl -J), with "_" for each other character: the package's "?" is refused in Windows names.
 */
export function attachmentDisposition(name: string, fallback = 'download'): string {
  const safe = safeFileName(name, fallback);
  return create(safe, { type: 'attachment', fallback: safe.replace(/[^\x20-\x7e]/g, '_') });
}
