/*
 * A heading, or the label above a part of a table, kept on the page of what follows it, in the one
 * layout pdfmake makes. The heading (with the subheadings right under it) goes into an unbreakable
 * block with ROOM_BELOW of empty room under it, and what follows is pulled up into that room by a
 * negative margin: where the block does not fit, pdfmake moves it, room and all, to the next page, and
 * what follows comes after it there. pdfmake's own pageBreakBefore lays the whole document out again
 * for each page break it adds (quadratic), and reads where a table starts before moving its header.
 */

import { plainText } from './text-pieces.ts';

type Block = Record<string, unknown> | string;

/**
 * The room a kept block keeps under it, in points: three lines of body text, or what a table says
 * its header and first row need (`keepRoom`), up to MAX_ROOM so that the kept block fits a page.
 */
const ROOM_BELOW = 40;
const MAX_ROOM = 200;
const KEPT_STYLES = new Set(['h1', 'h2', 'h3', 'h4', 'tablePart']);
/**
 * Kept blocks in a row that move together, and the longest text one may have: pdfmake shows only the
 * first page of an unbreakable block taller than a page, so a block is kept only while it is short.
 */
const MAX_RUN = 3;
const MAX_KEPT_CHARACTERS = 300;

// A heading long enough to be set in pieces (a stack) is not kept: it is far longer than that.
const isKept = (block: Block): boolean =>
  typeof block === 'object' &&
  KEPT_STYLES.has(block.style as string) &&
  block.text !== undefined &&
  plainText(block.text).length <= MAX_KEPT_CHARACTERS;

/** The top-level blocks, each run of kept blocks bound to the block after it. */
export function keepWithNext(content: Block[]): Block[] {
  const out: Block[] = [];
  let run: Block[] = [];
  for (const block of content) {
    if (isKept(block)) {
      // A longer run: the first ones stand alone, the last MAX_RUN move with what follows.
      if (run.length === MAX_RUN) out.push(run.shift()!);
      run.push(block);
      continue;
    }
    if (run.length > 0) {
      const wanted = typeof block === 'object' ? block.keepRoom : undefined;
      const room = Math.min(MAX_ROOM, Math.max(ROOM_BELOW, typeof wanted === 'number' ? wanted : 0));
      out.push({ stack: [...run, { canvas: [], margin: [0, room, 0, 0] }], unbreakable: true });
      out.push({ stack: [block], margin: [0, -room, 0, 0] });
      run = [];
    } else out.push(block);
  }
  // Kept blocks at the end head nothing.
  out.push(...run);
  return out;
}
