import type { Token, Tokens } from 'marked';
import { isRightToLeft } from './bidi-lines.ts';
import { type Inline, textBlock } from './text-pieces.ts';

/*
 * A Markdown table as pdfmake tables that fit the page. Each column gets an equal share of the width,
 * as a percentage: star widths all grow to the widest cell's longest word, which pushed a table past
 * the right margin. A table of many columns is set in parts of at most MAX_COLUMNS, each repeating the
 * first column (the rows' names, as a printed spreadsheet repeats them): in one part, 40 columns were
 * each two letters wide, every word was broken letter by letter, and wide letters ran past the margin.
 */
const MAX_COLUMNS = 10;
/** From this many columns, the table's text is set smaller so that a column still holds a short word. */
const SMALL_FROM = 7;
const SMALL_FONT_SIZE = 9;
/** The documents' text size and line spacing (markdown-pdf.ts's default style). */
export const BODY_FONT_SIZE = 10.5;
export const BODY_LINE_SPACING = 1.25;

type Runs = (tokens: Token[]) => Inline[];

/**
 * The page's width for text (A4, 595 points, less markdown-pdf.ts's side margins of 40), and what
 * pdfmake's table layout adds around a cell's text.
 */
export const TEXT_WIDTH = 515;
const CELL_PADDING = { across: 8, down: 5 };
/** A line's height per point of font size: DejaVu Sans' ascent and descent, times the documents' line spacing. */
const LINE_HEIGHT = 1.164 * BODY_LINE_SPACING;
const WIDE_CHARACTER = /[\p{Ideographic}\p{Script=Hangul}\p{Script=Hiragana}\p{Script=Katakana}\p{Emoji_Presentation}]/u;

/**
 * About how tall a part's header row and first row are set: the room a heading above the table keeps
 * under it (keep-with-next.ts), where 40 points were too little for a header of several lines. Each
 * cell's lines from its characters' widths (a letter of bold DejaVu about 0.62 of the font size, a
 * Chinese character or an emoji one, a tenth more for the ends of lines), rounded up.
 */
function headRoom(rows: string[][], columnWidth: number, fontSize: number): number {
  const room = columnWidth - CELL_PADDING.across;
  const lines = (text: string) => {
    let width = 0;
    for (const character of text) width += WIDE_CHARACTER.test(character) ? 1 : 0.62;
    return Math.max(1, Math.ceil((width * fontSize * 1.1) / room));
  };
  return rows.reduce((sum, row) => sum + Math.max(...row.map(lines)) * LINE_HEIGHT * fontSize + CELL_PADDING.down, 0);
}

/**
 * The column indexes of each part: all of them when they fit, else column 0 and as even a share of the
 * others as the fewest parts allow (40 columns: 0 and 8 or 9 others in each of five parts).
 */
function columnParts(count: number): number[][] {
  if (count <= MAX_COLUMNS) return [[...Array(count).keys()]];
  const partCount = Math.ceil((count - 1) / (MAX_COLUMNS - 1));
  const perPart = Math.ceil((count - 1) / partCount);
  const parts: number[][] = [];
  for (let start = 1; start < count; start += perPart)
    parts.push([0, ...Array.from({ length: Math.min(perPart, count - start) }, (_, offset) => start + offset)]);
  return parts;
}

/** "Columns 1–9 of 25", "Columns 1 and 10–17 of 25": said above each part of a table set in parts. */
function partLabel(columns: number[], count: number): string {
  const first = columns[1]! + 1;
  const last = columns.at(-1)! + 1;
  const rest = first === last ? `${first}` : `${first}–${last}`;
  return first === 2 ? `Columns 1–${last} of ${count}` : `Columns 1 and ${rest} of ${count}`;
}

export function tableBlocks(table: Tokens.Table, runs: Runs): Record<string, unknown>[] {
  // A table headed right to left (Arabic, Hebrew) is read from the right: its first column is set
  // there, and its cells flush right, numbers too.
  const rightToLeft = isRightToLeft(table.header.map((cell) => cell.text).join(' '));
  // A column's alignment from its delimiter row (`---:` right, `:---:` centre).
  const cellOf = (cell: Tokens.TableCell) => {
    const alignment = cell.align ?? (rightToLeft ? 'right' : undefined);
    return textBlock(runs(cell.tokens), undefined, alignment ? { alignment } : {});
  };
  const count = table.header.length;
  const parts = columnParts(count);
  return parts.flatMap((columns) => {
    // Cells are made anew for each part: pdfmake keeps its measurements on the nodes it lays out.
    const order = rightToLeft ? columns.toReversed() : columns;
    const header = order.map((index) => ({ ...cellOf(table.header[index]!), bold: true, fillColor: '#eeeeee' }));
    const rows = table.rows.map((row) => order.map((index) => cellOf(row[index]!)));
    // Every part's columns as wide as the first part's, and its text as large: the last part may be narrower.
    // The header row starts a page with the first row under it, never ends one alone.
    const fontSize = count >= SMALL_FROM ? SMALL_FONT_SIZE : BODY_FONT_SIZE;
    const firstRows = [table.header, ...table.rows.slice(0, 1)].map((row) => order.map((index) => row[index]!.text));
    const part = {
      keepRoom: headRoom(firstRows, TEXT_WIDTH / parts[0]!.length, fontSize),
      table: {
        headerRows: 1,
        keepWithHeaderRows: 1,
        widths: columns.map(() => `${100 / parts[0]!.length}%`),
        body: [header, ...rows],
      },
      style: 'table',
      fontSize,
    };
    return parts.length === 1 ? [part] : [{ text: partLabel(columns, count), style: 'tablePart' }, part];
  });
}
