import { createRequire } from 'node:module';
import { plainText } from './text-pieces.ts';

/*
 * Right-to-left text (Arabic, Hebrew) in the order it is read. pdfmake sets a line's words left to
 * right in the order they are written, and fontkit draws each right-to-left word's letters (and the
 * space after it) from the right: a sentence in Arabic came out with its words backwards and its
 * spaces on the wrong side. Each line pdfmake builds is reordered by the Unicode Bidirectional
 * Algorithm (UAX #9's rule L2, with bidi-js's levels), word by word, before it is placed; a paragraph
 * whose first letter is right-to-left is right to left, and set flush right unless it is centred.
 */

const require = createRequire(import.meta.url);
// bidi-js is CommonJS whose types declare an ES default export: required as what it is.
const bidiFactory: typeof import('bidi-js').default = require('bidi-js');
const bidi = bidiFactory();
const RIGHT_TO_LEFT = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}]/u;
const LETTER = /\p{L}/u;

/** What this module reads and writes of pdfmake's lines and their words (inlines). */
interface LineInline {
  text: string;
  width: number;
  x: number;
  alignment?: string;
  font: { widthOfString(text: string, size: number, features?: unknown): number };
  fontSize: number;
  fontFeatures?: unknown;
  characterSpacing?: number;
}
interface Line {
  inlines: LineInline[];
  leadingCut: number;
  trailingCut: number;
}
/** A text node; `direction` is set by the documents' own blocks where they know it (a list's items). */
type TextNode = { text?: unknown; direction?: 'ltr' | 'rtl' };
interface LineBuilder {
  buildNextLine(this: unknown, textNode: TextNode): Line | null;
}

/** Whether a text is right to left: its first letter is (UAX #9's rule P2, letters for strong characters). */
export function isRightToLeft(text: string): boolean {
  const letter = text.match(LETTER)?.[0];
  return letter !== undefined && RIGHT_TO_LEFT.test(letter);
}

const directions = new WeakMap<TextNode, 'ltr' | 'rtl'>();
/** A text node's direction, read once per node. */
function direction(node: TextNode): 'ltr' | 'rtl' {
  if (node.direction) return node.direction;
  let found = directions.get(node);
  if (!found) {
    found = isRightToLeft(plainText(node.text)) ? 'rtl' : 'ltr';
    directions.set(node, found);
  }
  return found;
}

/** The line's words in the order they are seen, each placed after the one on its left. */
function reorderLine(line: Line, base: 'ltr' | 'rtl'): void {
  if (base === 'rtl' && (line.inlines[0]?.alignment ?? 'left') === 'left')
    for (const inline of line.inlines) inline.alignment = 'right';
  const text = line.inlines.map((inline) => inline.text).join('');
  if (base === 'ltr' && !RIGHT_TO_LEFT.test(text)) return;
  const { levels } = bidi.getEmbeddingLevels(text, base);
  const baseLevel = base === 'rtl' ? 1 : 0;
  const mirrored = bidi.getMirroredCharactersMap(text, levels);
  const levelOf = new Map<LineInline, number>();
  const words: LineInline[] = [];
  let offset = 0;
  for (const inline of line.inlines) {
    for (const part of partsByLevel(inline, offset, levels, baseLevel)) {
      const word = part.text === inline.text ? inline : { ...inline, text: part.text, width: widthOf(inline, part.text) };
      word.text = drawnText(part.text, part.start, mirrored);
      // fontkit draws a right-to-left script's letters from the right, but spaces and punctuation
      // alone ("• " before an Arabic item) from the left: at a right-to-left level they are reversed.
      if (part.level % 2 === 1 && !RIGHT_TO_LEFT.test(word.text)) word.text = [...word.text].reverse().join('');
      levelOf.set(word, part.level);
      words.push(word);
    }
    offset += inline.text.length;
  }
  const first = words[0];
  const last = words.at(-1);
  const visual = visualOrder(words, levelOf);
  // The space pdfmake cuts from the line's ends hangs off the left edge: a left-to-right first word's
  // leading space, or a right-to-left last word's trailing space (drawn on its left).
  const leftmost = visual[0]!;
  const odd = (inline: LineInline) => levelOf.get(inline)! % 2 === 1;
  let x = -(leftmost === first && !odd(leftmost) ? line.leadingCut : leftmost === last && odd(leftmost) ? line.trailingCut : 0);
  for (const inline of visual) {
    inline.x = x;
    x += inline.width;
  }
  line.inlines = visual;
}

/** Rule L2: from the highest level down to the lowest odd one, every run of words at that level or higher reversed. */
function visualOrder(words: LineInline[], levelOf: Map<LineInline, number>): LineInline[] {
  const visual = [...words];
  const levels = [...levelOf.values()];
  const highest = Math.max(...levels);
  const lowestOdd = Math.min(...levels.map((level) => (level % 2 === 1 ? level : level + 1)));
  for (let level = highest; level >= lowestOdd; level--)
    for (let start = 0; start < visual.length; start++) {
      if (levelOf.get(visual[start]!)! < level) continue;
      let end = start;
      while (end + 1 < visual.length && levelOf.get(visual[end + 1]!)! >= level) end++;
      visual.splice(start, end - start + 1, ...visual.slice(start, end + 1).reverse());
      start = end;
    }
  return visual;
}

/**
 * A word's parts of one level each: a bracket or a number beside a right-to-left word may have
 * another, and so may the space after a word set the other way ("1234 " among Arabic words).
 */
function partsByLevel(inline: LineInline, offset: number, levels: Uint8Array, baseLevel: number) {
  const { text } = inline;
  if (text === '') return [{ text, start: offset, level: baseLevel }];
  const parts: { text: string; start: number; level: number }[] = [];
  let start = 0;
  for (let index = 1; index <= text.length; index++)
    if (index === text.length || levels[offset + index] !== levels[offset + start]) {
      parts.push({ text: text.slice(start, index), start: offset + start, level: levels[offset + start]! });
      start = index;
    }
  return parts;
}

/** A part's width as pdfmake measures a word (TextInlines.widthOfText). */
const widthOf = (inline: LineInline, text: string) =>
  inline.font.widthOfString(text, inline.fontSize, inline.fontFeatures) + (inline.characterSpacing ?? 0) * (text.length - 1);

/** A word's text with the brackets a right-to-left context mirrors (UAX #9's rule L4) swapped: fontkit does not. */
function drawnText(text: string, offset: number, mirrored: Map<number, string>): string {
  if (mirrored.size === 0) return text;
  let drawn = '';
  for (let index = 0; index < text.length; index++) drawn += mirrored.get(offset + index) ?? text[index];
  return drawn;
}

let installed = false;
/** pdfmake has no hook between building a line and placing it: its one line builder is wrapped, once. */
export function setLinesInReadingOrder(): void {
  if (installed) return;
  installed = true;
  // The module pdfmake's own code requires (CommonJS, no types), the same instance.
  const { prototype } = (require('pdfmake/js/LayoutBuilder.js') as { default: { prototype: LineBuilder } }).default;
  const buildNextLine = prototype.buildNextLine;
  prototype.buildNextLine = function (this: unknown, textNode: TextNode) {
    const line = buildNextLine.call(this, textNode);
    if (line && line.inlines.length > 0) reorderLine(line, direction(textNode));
    return line;
  };
}
