import type { FontName } from './fonts.ts';

/** A run of text and its marks, as pdfmake takes it. */
export type Inline = {
  text: string | Run[];
  bold?: boolean;
  italics?: boolean;
  font?: FontName;
  link?: string;
  decoration?: string;
  color?: string;
};
export type Run = string | Inline;

/*
 * Bounds that keep long text cheap before pdfmake sees it. pdfmake breaks a word wider
 * than the line one character at a time (quadratic in its length), lays out a text block that spans
 * pages again on each page (quadratic in its lines), and copies a block's remaining words for each
 * word it sets (quadratic in its words: each Chinese character is one).
 */
/** A run of non-space characters longer than this gets invisible break opportunities (U+200B). */
const MAX_UNBROKEN = 48;
/** A text block longer than this many lines is laid out in pieces of this many lines. */
const LINES_PER_PIECE = 40;
/** A line of more words than this (a long paragraph) ends its piece at a break opportunity, and the rest starts the next. */
const WORDS_PER_PIECE = 1_000;
/** What pdfmake measures as one word each: up to a space, or a character of a script that breaks between characters. */
const WORD_END = /[\s\u200B]|[\p{Ideographic}\p{Script=Hangul}\p{Script=Hiragana}\p{Script=Katakana}]/gu;
const SENTENCE_END = /[.!?…]["'”’)]*\s+|[。！？]/gu;
const SENTENCE_LOOKBACK = 2_000;
const LONG_WORD = new RegExp(`\\S{${MAX_UNBROKEN}}(?=\\S)`, 'g');
export const breakLongWords = (text: string) => (text.length > MAX_UNBROKEN ? text.replace(LONG_WORD, '$&\u200B') : text);

/**
 * Splits inline runs after every LINES_PER_PIECE line breaks and within a line of more than
 * WORDS_PER_PIECE words, so that no one block spans pages.
 */
export function pieces(runs: Inline[]): Inline[][] {
  const out: Inline[][] = [[]];
  let lines = 0;
  let words = 0;
  const endPiece = () => {
    out.push([]);
    words = 0;
  };
  for (const run of runs) {
    if (typeof run.text !== 'string') {
      out.at(-1)!.push(run);
      continue;
    }
    const parts = run.text.split('\n');
    for (const [index, part] of parts.entries()) {
      let rest = part;
      let cutAtEnd = false;
      for (let cut = wordsEnd(rest, WORDS_PER_PIECE - words); cut !== undefined; cut = wordsEnd(rest, WORDS_PER_PIECE)) {
        out.at(-1)!.push({ ...run, text: rest.slice(0, cut) });
        endPiece();
        rest = rest.slice(cut);
        cutAtEnd = rest === '';
      }
      words += countWords(rest);
      const last = index === parts.length - 1;
      // The line break that ends a piece is the break between the pieces' blocks.
      const endsPiece = !last && ++lines % LINES_PER_PIECE === 0;
      if (cutAtEnd && !last) continue;
      if (rest || last || !endsPiece) out.at(-1)!.push({ ...run, text: last || endsPiece ? rest : `${rest}\n` });
      if (endsPiece) endPiece();
    }
  }
  return out.filter((piece) => piece.length > 0);
}

const countWords = (text: string) => text.match(WORD_END)?.length ?? 0;

/**
 * Where a piece of the text that holds at most room words ends: after the last sentence that ends
 * in its last SENTENCE_LOOKBACK characters, or else after its room-th word. Undefined where it has
 * fewer words. The line before a cut ends short: at a sentence's end it reads as a new paragraph.
 */
function wordsEnd(text: string, room: number): number | undefined {
  if (text.length < room) return undefined;
  let count = 0;
  for (const match of text.matchAll(WORD_END)) {
    if (++count < room) continue;
    const end = match.index + match[0].length;
    const from = Math.max(0, end - SENTENCE_LOOKBACK);
    const sentences = [...text.slice(from, end).matchAll(SENTENCE_END)];
    const last = sentences.at(-1);
    return last ? from + last.index + last[0].length : end;
  }
  return undefined;
}

/**
 * A block of text, in pieces when it is long (a paragraph, a heading, a table's cell); the style's
 * margins go around the whole.
 */
export function textBlock(runs: Inline[], style?: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const split = pieces(runs);
  const styled = style === undefined ? {} : { style };
  if (split.length <= 1) return { text: runs, ...styled, ...extra };
  return { stack: split.map((piece) => ({ text: piece, ...extra })), ...styled };
}

/** The characters of a text as pdfmake takes it: a string, or runs (strings or objects with a text) nested. */
export const plainText = (text: unknown): string =>
  typeof text === 'string'
    ? text
    : Array.isArray(text)
      ? text.map((run) => plainText(typeof run === 'object' && run !== null ? (run as { text?: unknown }).text : run)).join('')
      : '';
