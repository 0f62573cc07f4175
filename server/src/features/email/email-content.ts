import { convert } from 'html-to-text';
import { marked } from 'marked';
import sanitizeHtml from 'sanitize-html';

/**
 * What we do to mail content before it is stored or sent: HTML sanitized by an allow-list, text
 * made from HTML when a message has none, and the header values threading reads (message ids,
 * addresses) parsed with limits, since every part of a received message is the sender's to choose.
 */

/** Stored HTML above this is stored without its inline images (then, if still over, as its text only). */
const MAX_HTML_CHARS = 2 * 1024 * 1024;
/** Per stored header value, and how many headers a message keeps. */
const MAX_HEADER_VALUE_CHARS = 8 * 1024;
const MAX_HEADERS = 200;
/** References of a long thread keep their newest ids (RFC 5322: the first and the last matter most). */
const MAX_REFERENCE_IDS = 100;
const MAX_MESSAGE_ID_CHARS = 998;

const sanitizeOptions = (inlineImages: boolean): sanitizeHtml.IOptions => ({
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'font', 'center'],
  allowedAttributes: {
    a: ['href', 'name', 'title'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    td: ['colspan', 'rowspan', 'align', 'valign'],
    th: ['colspan', 'rowspan', 'align', 'valign'],
    table: ['width', 'cellpadding', 'cellspacing'],
    font: ['color'],
    '*': ['dir', 'lang'],
  },
  // Links keep http(s) and mailto; an image may only be inline (data:, or cid: for an attachment):
  // a remote image is how a sender learns that, when and where a message was read.
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: inlineImages ? ['data', 'cid'] : ['cid'] },
  allowProtocolRelative: false,
  exclusiveFilter: (frame) => frame.tag === 'img' && !frame.attribs.src,
  transformTags: {
    a: (tagName, attribs) => ({ tagName, attribs: { ...attribs, rel: 'noopener noreferrer nofollow', target: '_blank' } }),
  },
});

/** Received or written HTML, safe to show: no script, style, frame, event handler, javascript: URL or remote image. */
export function sanitizeEmailHtml(html: string): string {
  const clean = sanitizeHtml(html, sanitizeOptions(true));
  if (clean.length <= MAX_HTML_CHARS) return clean;
  const withoutImages = sanitizeHtml(html, sanitizeOptions(false));
  return withoutImages.length <= MAX_HTML_CHARS ? withoutImages : sanitizeHtml(html, { allowedTags: [], allowedAttributes: {} });
}

/** Plain text of (sanitized) HTML, for a message that came without a text part. */
export function textOfHtml(html: string): string {
  return convert(html, { wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }] }).trim();
}

/** An agent's Markdown body as the text and the sanitized HTML of an email. */
export function renderMarkdownEmail(markdown: string): { text: string; html: string } {
  const html = marked.parse(markdown, { async: false, gfm: true }) as string;
  return { text: markdown, html: sanitizeEmailHtml(html) };
}

/** A Message-ID without angle brackets or surrounding space; undefined if it is not one. */
export function normalizeMessageId(raw: string): string | undefined {
  const id = raw.trim().replace(/^<|>$/g, '').trim();
  return id.length > 0 && id.length <= MAX_MESSAGE_ID_CHARS && !/[\s<>]/.test(id) ? id : undefined;
}

/** The ids of a References or In-Reply-To value (`<a@b> <c@d>`), newest kept when there are too many. */
export function messageIdsOf(value: string | undefined): string[] {
  if (!value) return [];
  const bracketed = value.match(/<[^<>\s]{1,998}>/g);
  const ids = (bracketed ?? value.split(/[\s,]+/)).map(normalizeMessageId).filter((id): id is string => id !== undefined);
  return [...new Set(ids)].slice(-MAX_REFERENCE_IDS);
}

/** The References of a reply: the answered message's References, then its own id (the newest kept when there are too many). */
export function referencesAfter(answered: { messageId: string | null; referenceIds: string[] }): string[] {
  return [...answered.referenceIds, ...(answered.messageId ? [answered.messageId] : [])].slice(-MAX_REFERENCE_IDS);
}

/** A generated Message-ID on the sender's domain. */
export function newMessageId(fromAddress: string): string {
  return `${crypto.randomUUID()}@${domainOf(fromAddress)}`;
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

const ADDRESS = /^[^\s@<>",;]{1,64}@[^\s@<>",;]{1,253}$/;

/** The bare, lower-cased address of `Name <a@b>` or `a@b`; undefined if there is none. */
export function addressOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const bracketed = /<([^<>]+)>\s*$/.exec(value);
  const address = (bracketed ? bracketed[1]! : value).trim().toLowerCase();
  return ADDRESS.test(address) ? address : undefined;
}

/** The distinct addresses of a list of `Name <a@b>` values (bad ones dropped), at most `limit`. */
export function addressesOf(values: unknown, limit = 100): string[] {
  if (!Array.isArray(values)) return typeof values === 'string' ? addressesOf(values.split(','), limit) : [];
  return [...new Set(values.map(addressOf).filter((address): address is string => address !== undefined))].slice(0, limit);
}

/**
 * The headers a message keeps, lower-cased names, with bounded size: a hostile sender can make a
 * header as long as they like. Values that are arrays (repeated headers) are joined.
 */
export function boundedHeaders(headers: unknown): Record<string, string> {
  const kept: Record<string, string> = {};
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return kept;
  for (const [name, value] of Object.entries(headers).slice(0, MAX_HEADERS)) {
    const text = Array.isArray(value) ? value.map(String).join(', ') : typeof value === 'string' ? value : JSON.stringify(value);
    if (name.length > 200 || text === undefined) continue;
    kept[name.toLowerCase()] = text.length > MAX_HEADER_VALUE_CHARS ? `${text.slice(0, MAX_HEADER_VALUE_CHARS)}…` : text;
  }
  return kept;
}

/** A Date header as a Date, if it is one. */
export function dateOf(value: string | undefined): Date | null {
  if (!value) return null;
  const time = Date.parse(value);
  return Number.isNaN(time) ? null : new Date(time);
}

/** `Name <address>`, with the characters that would break the header taken out of the name. */
export const mailbox = (address: string, name: string | null | undefined) => {
  const clean = name?.replace(/["\\<>\r\n]/g, '').trim();
  return clean ? `"${clean}" <${address}>` : address;
};

/** `Re: <subject>` unless it is a reply already. */
export function replySubject(subject: string): string {
  return /^\s*re\s*:/i.test(subject) ? subject : `Re: ${subject}`.slice(0, 998);
}
